package sqldb

import (
	"sync"

	"modernc.org/libc"
)

// pinSQLiteAllocator keeps one block of each size class of the SQLite
// driver's C allocator allocated for the life of the process.
//
// That allocator (modernc.org/libc on modernc.org/memory) serves blocks of
// up to 16 KiB from 64 KiB pages, one size class per page, and returns a page
// to the kernel (munmap) as soon as its last block is freed, to map a new one
// for the next block. The driver copies every bound string and blob into a
// block of its own and frees them all when the statement has run, and
// SQLite frees its own row buffers as often, so whenever nothing else
// kept a class's page in use, a bulk file mapped and unmapped a page for
// every statement. Once the values were packed (their blocks moved from the
// 1 KiB class to the 512-byte one), mmap and munmap took 8 of the 24 s of
// reading and staging the inbox benchmark's 1,000,000-row file on SQLite.
// With one block of each class held, each class keeps a page mapped and
// reuses its free blocks, and the same file took 12 s (docs/benchmarks.md,
// issue 20). The blocks take 32 KiB in all.
//
// Should a later version of the allocator not unmap empty pages, the pins
// cost nothing but those 32 KiB.
var pinSQLiteAllocator = sync.OnceFunc(func() {
	tls := libc.NewTLS()
	defer tls.Close()
	for class := 4; class <= 14; class++ { // 16 B to 16 KiB
		libc.Xmalloc(tls, libc.Tsize_t(1)<<class)
	}
})
