//go:build unix

package objstore

import (
	"io/fs"
	"syscall"
)

// inode returns the file's inode number, which changes when Put renames a new
// file over the key, so that ETags differ even within one mtime tick.
func inode(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
