package catalog

import (
	"fmt"
	"io"
	"io/fs"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/schedbridge/schedbridge/storage/lake"
)

// footerIO serves the new files of a commit from the footers their writer
// kept (lake.FileInfo.Footer), so that iceberg-go's FileToDataFile computes
// the data files' row counts, column sizes and bounds from the same bytes it
// would read from the bucket, without reading them: the commit then costs
// no request to the bucket for its data files (on S3 two ranged GETs per
// file, on a cold page cache a disk read each). A Parquet reader
// asks for the file's size (Seek to the end), its last 8 bytes (footer
// length and magic) and then the footer; anything before the footer is data
// that the statistics never need, so reading it is an error rather than a
// silent zero.
type footerIO struct {
	files map[string]lake.FileInfo // by URI
}

func (f footerIO) Open(name string) (iceio.File, error) {
	fi, ok := f.files[name]
	if !ok || len(fi.Footer) == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if int64(len(fi.Footer)) > fi.Bytes {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("footer of %d bytes in a file of %d", len(fi.Footer), fi.Bytes)}
	}
	return &footerFile{name: name, size: fi.Bytes, footer: fi.Footer}, nil
}

func (f footerIO) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrPermission}
}

// footerFile is a file of size bytes of which only the footer at its end
// is known.
type footerFile struct {
	name   string
	size   int64
	footer []byte
	off    int64 // for Seek
}

func (f *footerFile) ReadAt(p []byte, off int64) (int, error) {
	start := f.size - int64(len(f.footer))
	if off < start || off > f.size {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fmt.Errorf("bytes at %d are not the footer (from %d): only the footer is kept", off, start)}
	}
	n := copy(p, f.footer[off-start:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *footerFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *footerFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.size
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	f.off = offset
	return offset, nil
}

func (f *footerFile) Stat() (fs.FileInfo, error) { return footerStat{f}, nil }
func (f *footerFile) Close() error               { return nil }

type footerStat struct{ f *footerFile }

func (s footerStat) Name() string       { return s.f.name }
func (s footerStat) Size() int64        { return s.f.size }
func (s footerStat) Mode() fs.FileMode  { return 0o444 }
func (s footerStat) ModTime() time.Time { return time.Time{} }
func (s footerStat) IsDir() bool        { return false }
func (s footerStat) Sys() any           { return nil }
