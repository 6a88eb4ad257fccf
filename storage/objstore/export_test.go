package objstore

// The tests copy in parts of 10 MiB, so that the contract's large Move goes
// through the multipart copy with an object of 24 MiB instead of 128 MiB.
// minio-go splits an object evenly into parts of at most this size, so a
// part is at least half of it and stays above S3's smallest part (5 MiB).
func init() { copyPartSize = 10 << 20 }
