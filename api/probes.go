package api

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/pipeline"
)

// SchemaChecker reports whether the database carries every migration the
// binary expects (storage/sqldb's CheckSchema).
type SchemaChecker interface {
	CheckSchema(ctx context.Context) error
}

// BucketLister is the one call of the object store that GET /readyz makes:
// a listing of at most one key under a prefix that holds nothing. On S3 it
// is a single ListObjectsV2 request, which fails when the server is down,
// the bucket is missing or the credentials are wrong; objstore.Bucket
// implements it.
type BucketLister interface {
	List(ctx context.Context, prefix, startAfter string, limit int) ([]pipeline.ObjectInfo, error)
}

// readyzPrefix is the prefix the bucket check lists. No component writes
// under it, so the directory store walks nothing and S3 returns an empty
// page instead of a page of real keys.
const readyzPrefix = "readyz/"

// probeTimeout bounds each readiness check, below the usual probe timeout
// of orchestrators, so that a hanging dependency yields a 503 with its name
// instead of a probe timeout that names nothing.
const probeTimeout = 2 * time.Second

// The values of the checks in the body of GET /readyz.
const (
	checkOK          = "ok"
	checkDraining    = "draining"
	checkUnreachable = "unreachable"
	checkPending     = "pending"
	checkUnknown     = "unknown"
	checkSkipped     = "skipped"
	checkNotWired    = "not_configured"
)

// isProbe reports the paths of the orchestrator's probes, which the drain
// middleware lets through: liveness must stay 200 while the process drains,
// or the orchestrator would kill it in the middle of its work, and readiness
// says "draining" in its own body.
func isProbe(path string) bool { return path == "/livez" || path == "/readyz" }

// livez answers from the process alone. It touches neither the database nor
// the bucket, so that an outage of either makes every replica unready (no
// traffic) but never gets them restarted in a loop.
func (s *Server) livez(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz tells whether this replica should get traffic: not draining, the
// database answers and carries every migration, and the bucket answers.
// Every call asks again; nothing is cached, so a replica becomes ready the
// moment `schedbridge migrate` finishes and unready the moment a dependency
// goes away.
func (s *Server) readyz(c *gin.Context) {
	checks := map[string]string{"draining": checkOK, "database": checkSkipped, "migrations": checkSkipped, "bucket": checkSkipped}
	if s.draining.Load() {
		checks["draining"] = checkDraining
		s.readyzAnswer(c, checks)
		return
	}
	ctx := c.Request.Context()
	var wg sync.WaitGroup
	var bucket string
	wg.Go(func() { bucket = s.checkBucket(ctx) })
	checks["database"], checks["migrations"] = s.checkDatabase(ctx)
	wg.Wait()
	checks["bucket"] = bucket
	s.readyzAnswer(c, checks)
}

func (s *Server) readyzAnswer(c *gin.Context, checks map[string]string) {
	var failing []string
	for _, name := range []string{"draining", "database", "migrations", "bucket"} {
		if v := checks[name]; v != checkOK && v != checkSkipped {
			failing = append(failing, name)
		}
	}
	if len(failing) > 0 {
		c.Header("Retry-After", s.retryAfter())
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "checks": checks, "failing": failing})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok", "checks": checks, "failing": []string{}})
}

// checkDatabase pings the database and then reads its applied migrations.
// The reasons go to the log only: the probe needs no credential, so its body
// names the failing check and not the server's address or error text.
func (s *Server) checkDatabase(ctx context.Context) (database, migrations string) {
	if s.deps.DB == nil {
		return checkNotWired, checkUnknown
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := s.deps.DB.Ping(pctx); err != nil {
		s.log.WarnContext(ctx, "readyz: database unreachable", slog.Any("err", err))
		return checkUnreachable, checkUnknown
	}
	if s.deps.Schema == nil {
		return checkOK, checkNotWired
	}
	if err := s.deps.Schema.CheckSchema(pctx); err != nil {
		s.log.WarnContext(ctx, "readyz: migrations not applied", slog.Any("err", err))
		return checkOK, checkPending
	}
	return checkOK, checkOK
}

func (s *Server) checkBucket(ctx context.Context) string {
	if s.deps.Bucket == nil {
		return checkNotWired
	}
	bctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if _, err := s.deps.Bucket.List(bctx, readyzPrefix, "", 1); err != nil {
		s.log.WarnContext(ctx, "readyz: bucket unreachable", slog.Any("err", err))
		return checkUnreachable
	}
	return checkOK
}
