//go:build !unix

package objstore

import "io/fs"

// inode is 0 where the platform exposes no inode number; size and mtime then
// carry the change token alone.
func inode(fs.FileInfo) uint64 { return 0 }
