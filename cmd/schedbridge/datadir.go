package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/schedbridge/schedbridge/pipeline"
)

// checkDataDir makes sure that the data directory exists and that this
// process may write in it, before any store is opened there. A volume
// mounted into the container that belongs to another user would otherwise
// fail deep in SQLite with "unable to open database file (14)", which
// names neither the directory nor its owner.
func checkDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return dataDirError(dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-check-")
	if err != nil {
		return dataDirError(dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// dataDirError explains a data directory this process may not write in:
// who owns it, who the process is, and how to fix it.
func dataDirError(dir string, err error) error {
	if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	if errors.Is(err, syscall.EROFS) {
		return pipeline.Errorf(pipeline.Invalid, "data directory %s (data_dir, SCHEDBRIDGE_DATA_DIR) is on a read-only file system: mount a writable volume there", dir)
	}
	// The directory, or the first of its parents that exists, is the one
	// whose owner matters.
	owned := dir
	for {
		if _, err := os.Stat(owned); err == nil || filepath.Dir(owned) == owned {
			break
		}
		owned = filepath.Dir(owned)
	}
	owner := ""
	if st, err := os.Stat(owned); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			owner = fmt.Sprintf(" %s is owned by uid %d (gid %d, mode %04o) and", owned, sys.Uid, sys.Gid, st.Mode().Perm())
		}
	}
	return pipeline.Errorf(pipeline.Invalid, "data directory %s (data_dir, SCHEDBRIDGE_DATA_DIR) is not writable:%s this process runs as uid %d (gid %d); "+
		"give the directory to the process's user (chown -R %d %s), or in Kubernetes set the pod's securityContext.fsGroup, "+
		"or start the container with --user set to the directory's owner (docs/operations.md)",
		dir, owner, os.Getuid(), os.Getgid(), os.Getuid(), dir)
}
