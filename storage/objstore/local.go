package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Local is a Bucket on a directory of the local file system, so that a single
// machine runs without an S3 server. Each key is a file under the directory;
// Put stages data in dir/.tmp on the same file system and renames it into
// place, which makes replacements atomic.
type Local struct {
	dir string // absolute, cleaned
	tmp string // dir/.tmp
}

var _ Bucket = (*Local)(nil)

// staleTmpAge is how old a staging file must be before NewLocal removes it as
// the leftover of a crashed Put; no Put runs that long on a healthy machine.
const staleTmpAge = 24 * time.Hour

// renameRetries bounds how often Put and Move recreate a parent directory that
// a concurrent Delete pruned before the rename.
const renameRetries = 32

// NewLocal opens (creating if needed) a directory store rooted at dir, so that
// the embedded default needs no set-up. It removes staging files older than a
// day, left behind by crashed processes.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("object store directory %q: %w", dir, err)
	}
	l := &Local{dir: abs, tmp: filepath.Join(abs, tmpDirName)}
	if err := os.MkdirAll(l.tmp, 0o750); err != nil {
		return nil, fmt.Errorf("object store directory: %w", err)
	}
	// A staging file that cannot be removed now is tried again by the
	// lake's sweep; it does not keep the store from opening.
	_, _ = l.SweepTemp(context.Background(), time.Now().Add(-staleTmpAge))
	return l, nil
}

// String names the store as a file URL, e.g. "file:///srv/schedbridge/var/bucket".
// Dir is the store's root directory (absolute), under which each key is a
// file: for another client of the same files (storage/catalog's Iceberg
// file IO).
func (l *Local) Dir() string { return l.dir }

func (l *Local) String() string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(l.dir)}).String()
}

func (l *Local) path(key string) string {
	return filepath.Join(l.dir, filepath.FromSlash(key))
}

// Put writes r to a staging file, fsyncs it and renames it over the key's
// file, so that readers never see a partial object and a crash leaves either
// the old or the new content.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, size int64) (err error) {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.CreateTemp(l.tmp, "put-*")
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	tmp := f.Name()
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if size >= 0 {
		r = newExactReader(key, r, size)
	}
	if _, err = io.Copy(f, ctxReader{ctx, r}); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if pipeline.KindOf(err) == pipeline.Invalid {
			return err // the body's size was wrong; the message names the key
		}
		return fmt.Errorf("put %q: %w", key, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	err = f.Close()
	f = nil
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	if err = ctx.Err(); err != nil {
		return err
	}
	return l.rename(tmp, key, nil)
}

// rename moves the file at from to key's path, creating parent directories.
// srcGone, when set, tells whether a failed rename was caused by a vanished
// source rather than a pruned parent directory.
func (l *Local) rename(from, key string, srcGone func() bool) error {
	to := l.path(key)
	parent := filepath.Dir(to)
	var err error
	for range renameRetries {
		if err = os.MkdirAll(parent, 0o750); err != nil {
			if l.fileAbove(parent) {
				return conflict(key, "a parent of the key is an object")
			}
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTDIR) {
				// A concurrent Delete pruned a directory that MkdirAll had
				// just made or seen.
				continue
			}
			return fmt.Errorf("store %q: %w", key, err)
		}
		err = os.Rename(from, to)
		if err == nil {
			syncDir(parent)
			return nil
		}
		switch {
		case errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
			return conflict(key, "the key is a directory of other keys")
		case errors.Is(err, syscall.ENOTDIR):
			return conflict(key, "a parent of the key is an object")
		case errors.Is(err, fs.ErrNotExist):
			if srcGone != nil && srcGone() {
				return err
			}
			continue // a concurrent Delete pruned the parent; recreate it
		}
		return fmt.Errorf("store %q: %w", key, err)
	}
	return fmt.Errorf("store %q: %w", key, err)
}

// fileAbove reports whether dir or one of its ancestors below the root is a
// file, so that no key can live under dir.
func (l *Local) fileAbove(dir string) bool {
	for ; dir != l.dir && strings.HasPrefix(dir, l.dir+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if info, err := os.Lstat(dir); err == nil && !info.IsDir() {
			return true
		}
	}
	return false
}

func conflict(key, why string) error {
	return pipeline.Errorf(pipeline.Conflict, "object key %q conflicts with existing keys: %s", key, why)
}

// syncDir makes a rename durable; failures only weaken durability, so they
// are ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Get opens the key's file. The result is an *os.File, so callers may use it
// as an io.ReaderAt and Stat it for random access (e.g. zip archives).
func (l *Local) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return l.get(ctx, key, "")
}

// GetIfMatch opens the key's file if it is the version etag names. The check
// is made on the opened file, so a rename onto the key right after it does
// not change what is read.
func (l *Local) GetIfMatch(ctx context.Context, key, etag string) (io.ReadCloser, error) {
	return l.get(ctx, key, etag)
}

func (l *Local) get(ctx context.Context, key, etag string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		if missing(err) {
			return nil, notFound(key)
		}
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, notFound(key)
	}
	if etag != "" && objectInfo(key, info).ETag != etag {
		f.Close()
		return nil, changed(key)
	}
	return f, nil
}

// Stat describes the key's file.
func (l *Local) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	info, err := os.Stat(l.path(key))
	if err != nil {
		if missing(err) {
			return ObjectInfo{}, notFound(key)
		}
		return ObjectInfo{}, fmt.Errorf("stat %q: %w", key, err)
	}
	if !info.Mode().IsRegular() {
		return ObjectInfo{}, notFound(key)
	}
	return objectInfo(key, info), nil
}

func objectInfo(key string, info fs.FileInfo) ObjectInfo {
	return ObjectInfo{
		Key:      key,
		Size:     info.Size(),
		ETag:     fmt.Sprintf("%x-%x-%x", info.Size(), info.ModTime().UnixNano(), inode(info)),
		Modified: info.ModTime().UTC(),
	}
}

// missing reports whether a file-system error means that there is no file at
// the path, including a parent that is a file rather than a directory.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// List walks only the directories that can hold matching keys, then sorts the
// matches byte-wise, because a directory walk visits "a/b" after "a-c" and
// before "a0" while key order puts "a-c" < "a/b" < "a0".
func (l *Local) List(ctx context.Context, prefix, startAfter string, limit int) ([]ObjectInfo, error) {
	if err := checkList(limit); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Walk from the deepest directory the prefix names.
	rootKey, possible := prefixDir(prefix)
	if !possible {
		return []ObjectInfo{}, nil
	}
	root := l.dir
	if rootKey != "" {
		root = l.path(rootKey)
	}
	// Matches are collected by name first; only the page that is returned
	// pays for a stat, so listing a folder of many files page by page costs
	// one stat per file, not one per file and page.
	type match struct {
		key string
		d   fs.DirEntry
	}
	var matches []match
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if missing(err) {
				return nil // removed while we walk, or the prefix directory does not exist
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == l.dir {
			return nil
		}
		if p == l.tmp {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(l.dir, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if !dirMayMatch(key+"/", prefix, startAfter) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) || key <= startAfter || checkKey(key) != nil {
			return nil
		}
		matches = append(matches, match{key, d})
		return nil
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("list %q: %w", prefix, err)
	}
	sort.Slice(matches, func(i, j int) bool { return matches[i].key < matches[j].key })
	found := make([]ObjectInfo, 0, min(len(matches), limit))
	for _, m := range matches {
		if len(found) == limit {
			break
		}
		info, err := m.d.Info()
		if err != nil {
			if missing(err) {
				continue // removed while we list
			}
			return nil, fmt.Errorf("list %q: %w", prefix, err)
		}
		found = append(found, objectInfo(m.key, info))
	}
	return found, nil
}

// dirMayMatch reports whether keys below the directory dirKey (ending in "/")
// can start with prefix and sort after startAfter.
func dirMayMatch(dirKey, prefix, startAfter string) bool {
	if !strings.HasPrefix(dirKey, prefix) && !strings.HasPrefix(prefix, dirKey) {
		return false
	}
	// Every key below dirKey starts with it; if dirKey sorts before startAfter
	// without being its prefix, so do all of them.
	if dirKey < startAfter && !strings.HasPrefix(startAfter, dirKey) {
		return false
	}
	return true
}

// Delete removes the key's file and then the directories that became empty,
// up to (not including) the store's root, so that deleted trees leave no
// empty folders behind.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := l.path(key)
	info, err := os.Lstat(p)
	if err != nil {
		if missing(err) {
			return nil
		}
		return fmt.Errorf("delete %q: %w", key, err)
	}
	if info.IsDir() {
		return nil // a directory of other keys, not an object
	}
	if err := os.Remove(p); err != nil && !missing(err) {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	l.prune(filepath.Dir(p))
	return nil
}

// prune removes dir and its ancestors below the root while they are empty.
// os.Remove fails on non-empty directories, which ends the climb; a Put that
// races with it recreates its parent (see rename).
func (l *Local) prune(dir string) {
	for dir != l.dir && strings.HasPrefix(dir, l.dir+string(filepath.Separator)) {
		if err := os.Remove(dir); err != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// Move renames src's file to dst atomically, replacing dst.
func (l *Local) Move(ctx context.Context, src, dst string) error {
	if err := checkKey(src); err != nil {
		return err
	}
	if err := checkKey(dst); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	from := l.path(src)
	info, err := os.Lstat(from)
	if err != nil {
		if missing(err) {
			return notFound(src)
		}
		return fmt.Errorf("move %q: %w", src, err)
	}
	if !info.Mode().IsRegular() {
		return notFound(src)
	}
	if src == dst {
		return nil
	}
	srcGone := func() bool {
		_, err := os.Lstat(from)
		return missing(err)
	}
	if err := l.rename(from, dst, srcGone); err != nil {
		if missing(err) {
			return notFound(src)
		}
		return err
	}
	l.prune(filepath.Dir(from))
	return nil
}

// ctxReader stops a long copy when the context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// SweepTemp removes the staging files of Puts that were last written to
// before the given time and returns how many it removed. A Put writes its
// staging file as the body arrives, so a file that has not changed since
// long before is the leftover of a process that died during its Put; a
// live Put's file is as young as its last write. NewLocal calls it at
// start-up with an age of a day; the lake's sweep calls it while the
// process runs, with the sweep's age limit and clock.
func (l *Local) SweepTemp(ctx context.Context, before time.Time) (int, error) {
	entries, err := os.ReadDir(l.tmp)
	if err != nil {
		if missing(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("staging directory: %w", err)
	}
	n := 0
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || !info.ModTime().Before(before) {
			continue // gone meanwhile, not a staging file, or young
		}
		if err := os.Remove(filepath.Join(l.tmp, e.Name())); err != nil {
			if missing(err) {
				continue // the Put finished or failed meanwhile
			}
			return n, fmt.Errorf("remove staging file %s: %w", e.Name(), err)
		}
		n++
	}
	return n, nil
}

// PruneEmpty removes the empty directories below the directory that prefix
// names (a key prefix ending in "/"; "" for the whole store), the directory
// itself and the staging directory excepted, and returns how many it
// removed. Delete prunes what it empties, but other clients of the same
// files do not: iceberg-go's file IO deletes files without their folders.
// A Put that races with the pruning recreates its parent (see rename).
func (l *Local) PruneEmpty(ctx context.Context, prefix string) (int, error) {
	top := l.dir
	if prefix != "" {
		if !strings.HasSuffix(prefix, "/") || checkKey(strings.TrimSuffix(prefix, "/")) != nil {
			return 0, pipeline.Errorf(pipeline.Invalid, "prune %q: want a key prefix ending in /", prefix)
		}
		top = l.path(strings.TrimSuffix(prefix, "/"))
	}
	n := 0
	// prune removes the empty directories below dir and reports whether
	// dir is empty afterwards.
	var prune func(dir string) (bool, error)
	prune = func(dir string) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			if missing(err) {
				return false, nil
			}
			return false, fmt.Errorf("prune %q: %w", prefix, err)
		}
		empty := true
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if !e.IsDir() || p == l.tmp {
				empty = false
				continue
			}
			sub, err := prune(p)
			if err != nil {
				return false, err
			}
			if sub && os.Remove(p) == nil {
				n++
			} else {
				empty = false // written to meanwhile, or not empty
			}
		}
		return empty, nil
	}
	_, err := prune(top)
	return n, err
}
