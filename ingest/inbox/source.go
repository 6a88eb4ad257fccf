package inbox

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/schedbridge/schedbridge/ingest/bulk"
	"github.com/schedbridge/schedbridge/pipeline"
)

// source gives the two decoding passes a fresh view of one file each. A
// local file is rewound; a remote object is streamed from the response that
// open got, then fetched again for the second pass, except Parquet, whose
// reader needs random access: it is spooled to a temporary file once. Every
// fetch is pinned to the ETag the file was claimed with, so both passes read
// the same content even when a supplier uploads the name again meanwhile
// (the fetch then fails with Conflict, and the new upload is a file of its
// own).
type source struct {
	bucket Bucket
	ctx    context.Context
	key    string
	etag   string
	size   int64
	file   *os.File      // random-access copy, or the store's own file
	spool  string        // the temporary file to remove, if any
	remote io.ReadCloser // the current pass's reader of a remote object
	fresh  bool          // remote has not been read yet
}

// open prepares the file of f for reading.
func (p *Processor) open(ctx context.Context, f pipeline.InboxFile, format bulk.BulkFormat) (*source, error) {
	s := &source{bucket: p.bucket, ctx: ctx, key: f.Key, etag: f.ETag, size: f.Size}
	rc, err := p.bucket.GetIfMatch(ctx, f.Key, f.ETag)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", f.Key, err)
	}
	if file, ok := rc.(*os.File); ok {
		s.file = file
		return s, nil
	}
	if format != bulk.FormatParquet {
		s.remote, s.fresh = rc, true // the first pass reads this response
		return s, nil
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(p.cfg.SpoolDir, "inbox-*.parquet")
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", f.Key, err)
	}
	s.file, s.spool = tmp, tmp.Name()
	if _, err := io.Copy(tmp, rc); err != nil {
		s.Close()
		return nil, fmt.Errorf("spool %s: %w", f.Key, err)
	}
	return s, nil
}

// input returns the file from its start for one decoding pass.
func (s *source) input(name string) (bulk.BulkInput, error) {
	if s.file != nil {
		if _, err := s.file.Seek(0, io.SeekStart); err != nil {
			return bulk.BulkInput{}, err
		}
		st, err := s.file.Stat()
		if err != nil {
			return bulk.BulkInput{}, err
		}
		return bulk.BulkInput{Name: name, Body: s.file, At: s.file, Size: st.Size()}, nil
	}
	if s.fresh {
		s.fresh = false
		return bulk.BulkInput{Name: name, Body: s.remote, Size: s.size}, nil
	}
	rc, err := s.bucket.GetIfMatch(s.ctx, s.key, s.etag)
	if err != nil {
		return bulk.BulkInput{}, fmt.Errorf("open %s: %w", s.key, err)
	}
	if s.remote != nil {
		s.remote.Close()
	}
	s.remote = rc
	return bulk.BulkInput{Name: name, Body: rc, Size: s.size}, nil
}

// Close releases the open readers and removes a spooled copy.
func (s *source) Close() error {
	if s.remote != nil {
		s.remote.Close()
		s.remote = nil
	}
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
	if s.spool != "" {
		os.Remove(s.spool)
		s.spool = ""
	}
	return nil
}
