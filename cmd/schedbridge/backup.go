package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// cmdBackup is `schedbridge backup DIR`: a copy of the embedded default's
// data, taken while the service serves, that `lake relocate` turns into a
// working data directory at any path. The database comes first, so that
// the bucket's copy, taken after it, holds every file that the database's
// lake catalog names: published files are never rewritten, and the files
// removed meanwhile are only those of snapshots past their retention.
func cmdBackup(a *app, fs *flag.FlagSet) action {
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 1 {
			return usagef("want one directory to write the backup to")
		}
		dir := pos[0]
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		db, bucket, err := a.openStores(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		dbFile := filepath.Join(dir, sqldb.DefaultSQLiteFile)
		if err := db.BackupSQLite(ctx, dbFile); err != nil {
			return err
		}
		a.note("backup: database written to "+dbFile, "file", dbFile)
		local, ok := bucket.(*objstore.Local)
		if !ok {
			a.note("backup: the bucket is on S3 and was not copied; keep it with the bucket's versioning or replication (docs/operations.md)")
			return nil
		}
		dst := filepath.Join(dir, "bucket")
		n, err := copyTree(ctx, local.Dir(), dst)
		if err != nil {
			return fmt.Errorf("backup: copy the bucket: %w", err)
		}
		a.note(fmt.Sprintf("backup: %d files of the bucket copied to %s", n, dst), "files", n, "dir", dst)
		return nil
	}
}

// copyTree copies the regular files under src to dst, which must not
// exist. A file that the serving process moves or removes during the copy
// (an inbox file being processed, a temporary part) is skipped: it was
// not part of the state the database's copy names.
func copyTree(ctx context.Context, src, dst string) (int, error) {
	if _, err := os.Lstat(dst); err == nil {
		return 0, fmt.Errorf("%s exists already", dst)
	}
	n := 0
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o750)
		case !d.Type().IsRegular():
			return nil
		}
		copied, err := copyFile(path, target)
		if copied {
			n++
		}
		return err
	})
	return n, err
}

// copyFile copies one file and keeps its modification time, which the
// lake's sweep compares with its retention. It reports false, and no
// error, when the file is gone before it could be opened.
func copyFile(src, dst string) (bool, error) {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return false, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return false, err
	}
	if err := out.Close(); err != nil {
		return false, err
	}
	return true, os.Chtimes(dst, info.ModTime(), info.ModTime())
}
