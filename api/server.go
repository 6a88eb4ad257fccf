// Package api is the HTTP surface of schedbridge, and the only package that
// knows gin. Handlers decode with ingest, act through small interfaces that the
// storage adapters implement, and map the error vocabulary to status codes in
// one table (errors.go).
package api

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/api/requestid"
	"github.com/schedbridge/schedbridge/pipeline"
)

// Keys finds API keys by the hash of their secret and records their use.
type Keys interface {
	KeyByHash(ctx context.Context, hash string) (pipeline.APIKey, error)
	TouchKey(ctx context.Context, id string, at time.Time) error
}

// Tokens verifies the access tokens of machine clients (api/bearer over the
// registry of issuers).
type Tokens interface {
	Verify(ctx context.Context, raw string) (bearer.Token, error)
}

// TokenClients finds the registration of a token's client.
type TokenClients interface {
	ActiveTokenClient(ctx context.Context, issuer, clientID string) (pipeline.TokenClient, error)
}

// Portfolios reads portfolios.
type Portfolios interface {
	Portfolio(ctx context.Context, id string) (pipeline.Portfolio, error)
}

// Staging stores submissions with their audit entries and reads them back.
type Staging interface {
	StageForecast(ctx context.Context, a *pipeline.AuditEntry, f pipeline.Forecast, canonical []byte) (pipeline.StageResult, error)
	StageLocations(ctx context.Context, a *pipeline.AuditEntry, locs []pipeline.Location) (pipeline.StageResult, error)
	StageMetered(ctx context.Context, a *pipeline.AuditEntry, entries []pipeline.MeteredEntry) (pipeline.StageResult, error)
	StageProfiles(ctx context.Context, a *pipeline.AuditEntry, entries []pipeline.ProfileEntry) (pipeline.StageResult, error)
	Forecast(ctx context.Context, portfolio string, day pipeline.Day, version int) (pipeline.StoredForecast, error)
	ForecastVersions(ctx context.Context, portfolio string, day pipeline.Day) ([]pipeline.Version, error)
	Location(ctx context.Context, portfolio, malo string) (pipeline.StoredLocation, error)
}

// Audit records and reads the audit trail of data requests.
type Audit interface {
	RecordAudit(ctx context.Context, a *pipeline.AuditEntry) error
	AuditByHash(ctx context.Context, portfolio, hash string) ([]pipeline.AuditEntry, error)
}

// Pinger reports whether the database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are the adapters the API acts through.
type Deps struct {
	Keys Keys
	// Tokens and TokenClients accept bearer access tokens of registered
	// issuers; nil refuses every token with 401.
	Tokens       Tokens
	TokenClients TokenClients
	Portfolios   Portfolios
	Staging      Staging
	Audit        Audit
	DB           Pinger
	// Schema and Bucket are the readiness checks of GET /readyz beside the
	// database's ping; a nil one makes the replica unready (503), so that a
	// binary that forgot to wire a check cannot pass for ready.
	Schema SchemaChecker
	Bucket BucketLister
	// The inbox report, the console feed and the bucket-event wake-up; nil
	// fields leave their routes answering 503.
	InboxFiles InboxFiles
	Waker      Waker
	Events     Events
	// The day-ahead pipeline: running stages and chains, the results they
	// published, and the procured trades; nil fields leave their routes
	// answering 503 as well.
	Runner  Runner
	Results Results
	Trades  TradeStore
	// The market communication with the DSOs; nil leaves its routes
	// answering 503.
	Mako MarketComm
	// The ramp-up snapshot, the Zeitreihen tree and the prices, and the
	// period calculation; nil fields leave their routes answering 503.
	Marktdaten Marktdaten
	Calculator Calculator
	// The operators' console and app: starting and retrying runs, the runs'
	// log lines, the inbox desk and the recorded state they sum up; nil
	// fields leave their routes answering 503.
	Starter  RunStarter
	RunLogs  RunLogs
	Inbox    InboxDesk
	Recorded Recorded
	// The employees' portal (session API, employee API and pages); nil
	// leaves its paths unrouted, and the operators' web console as well,
	// which signs in through the portal.
	Portal *portal.Handler
	// Operators is the operator list of the web console (beside the
	// provider's operator groups); EventCursor starts the pages' live
	// stream after the newest event (nil: the pages have no live stream).
	Operators   OperatorList
	EventCursor EventCursor
}

// Config tunes the API. Zero values pick the documented defaults.
type Config struct {
	// MaxBodyBytes caps request bodies (413 above). Default 64 MiB.
	MaxBodyBytes int64
	// RatePerSecond and RateBurst limit requests per API key (429 above);
	// RatePerSecond 0 switches the limit off. RateBurst defaults to twice the
	// rate. The production default (50/s) is the binary's configuration.
	RatePerSecond float64
	RateBurst     int
	// RefusalsPerAddress and RefusalsTotal are how many refused requests
	// (401, 403, 429) of one client address, and of all, are recorded in
	// the audit trail per minute (defaults 30 and 300; negative records
	// every one); the rest are answered alike and counted in a metric (see
	// refusals.go).
	RefusalsPerAddress int
	RefusalsTotal      int
	// RetryAfter is what 503 answers tell clients while the server drains.
	RetryAfter time.Duration
	// Now is the clock; tests inject a fixed one.
	Now func() time.Time
	// Logger receives structured request and error logs. Its lines carry
	// the request's id when its handler is wrapped by requestid.Handler, as
	// cmd/schedbridge wraps the one logger every package gets.
	Logger *slog.Logger
	// Registry receives the API's metrics; nil creates a private one. The
	// API does not serve them: the binary does, on a listener of its own.
	Registry *prometheus.Registry
	// WebhookTokenHash, when set, is the SHA-256 (hex) of the token that
	// bucket event notifications must carry as "Authorization: Bearer".
	WebhookTokenHash string
	// WebhookOpen takes bucket event notifications without a token. Without
	// it and without WebhookTokenHash, the webhook is off (404).
	WebhookOpen bool
	// WriteTimeout bounds the sending of an answer, counted from its first
	// byte (see writeDeadline). Default 60 s.
	WriteTimeout time.Duration
	// StreamPoll is how often the console's event stream reads the
	// database for new events (default 1 s), and StreamHeartbeat how long
	// it stays silent at most before it sends a comment (default 15 s), so
	// that proxies and clients see a live connection.
	StreamPoll      time.Duration
	StreamHeartbeat time.Duration
	// StreamRecheck is how often at most an open event stream goes without
	// finding its principal again (default 30 s; it also does before every
	// event it sends), and StreamMaxAge how long one stream lives at most
	// before it ends and its client reconnects with Last-Event-ID (default
	// 30 min): a credential revoked, expired or signed out ends the streams
	// it opened, and a reconnect must pass authentication again.
	StreamRecheck time.Duration
	StreamMaxAge  time.Duration
	// StreamTick drives the stream's reads of the database (default
	// time.NewTicker of StreamPoll); tests tick it by hand. It returns the
	// ticker's channel and the function that stops it.
	StreamTick func(d time.Duration) (<-chan time.Time, func())
}

// Server is the HTTP API.
type Server struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	now      func() time.Time
	engine   *gin.Engine
	draining atomic.Bool
	working  atomic.Int64

	limMu    sync.Mutex
	limiters map[string]*rate.Limiter

	// refusals is the audit budget of refused requests; nil records all.
	refusals   *refusalBudget
	unrecorded prometheus.Counter

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
	dataReqs *prometheus.CounterVec
}

// New builds the server and its routes.
func New(cfg Config, deps Deps) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 64 << 20
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = max(1, int(2*cfg.RatePerSecond))
	}
	if cfg.RefusalsPerAddress == 0 {
		cfg.RefusalsPerAddress = 30
	}
	if cfg.RefusalsTotal == 0 {
		cfg.RefusalsTotal = 300
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 5 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 60 * time.Second
	}
	if cfg.StreamPoll <= 0 {
		cfg.StreamPoll = time.Second
	}
	if cfg.StreamHeartbeat <= 0 {
		cfg.StreamHeartbeat = 15 * time.Second
	}
	if cfg.StreamRecheck <= 0 {
		cfg.StreamRecheck = 30 * time.Second
	}
	if cfg.StreamMaxAge <= 0 {
		cfg.StreamMaxAge = 30 * time.Minute
	}
	if cfg.StreamTick == nil {
		cfg.StreamTick = wallTicker
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, deps: deps, log: cfg.Logger, now: cfg.Now, limiters: map[string]*rate.Limiter{}}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "schedbridge_http_requests_total", Help: "HTTP requests by method, route and status code.",
	}, []string{"method", "route", "code"})
	s.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "schedbridge_http_request_duration_seconds", Help: "HTTP request latency by method and route.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"method", "route"})
	s.inflight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "schedbridge_http_requests_in_flight", Help: "HTTP requests being served.",
	})
	s.dataReqs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "schedbridge_data_requests_total", Help: "Requests to the data endpoints by endpoint and audit outcome.",
	}, []string{"endpoint", "outcome"})
	s.unrecorded = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "schedbridge_audit_refusals_unrecorded_total",
		Help: "Refused requests (401, 403, 429) answered but not recorded one by one in the audit trail, beyond the per-minute budget.",
	})
	if cfg.RefusalsPerAddress > 0 && cfg.RefusalsTotal > 0 {
		s.refusals = newRefusalBudget(cfg.RefusalsPerAddress, cfg.RefusalsTotal)
	}
	cfg.Registry.MustRegister(s.requests, s.duration, s.inflight, s.dataReqs, s.unrecorded)

	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	// A path is answered as it was asked or not at all: neither the portal's
	// contract nor the bridge's has a 301 or 307, and a redirected POST would
	// make the client send its body again. A trailing slash or another case
	// is an unknown path, 404 with the body of its owner.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.Use(s.requestID, s.writeDeadline, s.recoverer, s.observe, s.drain)
	// The portal has its own error body and allows no 405: an unknown
	// method on a portal path is as unknown as the path.
	e.NoRoute(func(c *gin.Context) {
		if portal.Owns(c.Request.URL.Path) {
			portal.NotFound(c)
			return
		}
		if deps.Portal != nil && consolePath(c.Request.URL.Path) && c.Request.Method == http.MethodGet {
			s.consoleNotFound(c)
			return
		}
		c.JSON(http.StatusNotFound, gin.H{"detail": "Not Found"})
	})
	e.NoMethod(func(c *gin.Context) {
		if portal.Owns(c.Request.URL.Path) {
			portal.NotFound(c)
			return
		}
		c.JSON(http.StatusMethodNotAllowed, gin.H{"detail": "Method Not Allowed"})
	})

	e.GET("/health", s.health)
	e.GET("/livez", s.livez)
	e.GET("/readyz", s.readyz)
	e.GET("/openapi.json", s.openapi)
	s.docsRoutes(e)

	// Every data request is audited from the first middleware on, so that
	// requests refused for their key or their rate are in the trail too.
	data := e.Group("/v1", s.audit, s.requireScope(pipeline.ScopeData), s.rateLimit)
	data.POST("/forecasts", s.postForecast)
	data.PUT("/master-data", s.putMasterData)
	data.POST("/metered-data", s.postMeteredData)
	data.POST("/profiles", s.postProfiles)
	data.GET("/forecasts/:delivery_day", s.getForecast)
	data.GET("/forecasts/:delivery_day/versions", s.getForecastVersions)
	data.GET("/master-data/:malo", s.getMasterData)
	data.GET("/submissions/:input_hash", s.getSubmission)

	// Operators' routes take process keys; they are not data requests, so
	// they are not in the audit trail.
	proc := e.Group("/v1", s.requireScope(pipeline.ScopeProcess), s.rateLimit)
	proc.GET("/process/inbox", s.needs(deps.InboxFiles != nil && deps.Inbox != nil, "the inbox"), s.getInbox)
	e.POST("/v1/inbox/events", s.postBucketEvents)
	s.pipelineRoutes(e)
	s.consoleRoutes(e)
	s.mobileRoutes(e)
	s.makoRoutes(e)
	s.marktdatenRoutes(e)
	if deps.Portal != nil {
		deps.Portal.Register(e)
	}
	s.webConsoleRoutes(e)
	s.engine = e
	return s
}

// needs answers 503 on routes whose adapter the binary did not wire; what
// names the missing part for the caller.
func (s *Server) needs(wired bool, what string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !wired {
			s.fail(c, pipeline.Errorf(pipeline.Unavailable, "this server runs without %s", what))
			return
		}
		c.Next()
	}
}

// Handler is the root HTTP handler.
func (s *Server) Handler() http.Handler { return s.engine }

// Routes lists the registered method and path pairs (gin syntax), for the
// OpenAPI completeness test and for operators.
func (s *Server) Routes() gin.RoutesInfo { return s.engine.Routes() }

// Drain makes the server answer every new request with 503 and Retry-After,
// for the time between SIGTERM and the end of in-flight requests.
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) retryAfter() string {
	return strconv.Itoa(int(math.Ceil(s.cfg.RetryAfter.Seconds())))
}

func (s *Server) drain(c *gin.Context) {
	// The portal's contract has no 503: its short requests are served to
	// the end of the grace period like those in flight.
	if s.draining.Load() && !portal.Owns(c.Request.URL.Path) && !isProbe(c.Request.URL.Path) {
		c.Header("Retry-After", s.retryAfter())
		c.Header("Connection", "close")
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{
			"detail": "service is restarting; retry the identical request after " + s.retryAfter() + " s",
		})
		return
	}
	s.working.Add(1)
	defer s.working.Add(-1)
	c.Next()
}

// InFlight is the number of requests being worked on, not counting those
// answered with 503 while draining.
func (s *Server) InFlight() int64 { return s.working.Load() }

// recoverer turns a panic into a 500 with the usual body and a log line, so a
// bug in one handler does not take the connection down without an answer.
func (s *Server) recoverer(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.ErrorContext(c.Request.Context(), "panic", slog.Any("panic", r), slog.String("route", c.FullPath()))
			if portal.Owns(c.Request.URL.Path) {
				portal.Internal(c)
				return
			}
			c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"detail": "internal error"})
		}
	}()
	c.Next()
}

// requestID names the request (see package requestid) before anything else
// runs, so that every answer, the portal's and the 404s included, carries the
// X-Request-ID header and every line logged for the request carries its id.
func (s *Server) requestID(c *gin.Context) {
	id := requestid.Of(c.GetHeader(requestid.Header))
	c.Header(requestid.Header, id)
	c.Request = c.Request.WithContext(requestid.With(c.Request.Context(), id))
	c.Next()
}

// methodLabel is a request's method as a label of the request metrics: one
// of the methods of RFC 9110 and RFC 5789, else "other". The route label is
// closed already (a route template or "unmatched"), but the method is any
// token the client sends, and every distinct label value would stay a series
// of /metrics for the life of the process.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// maxLoggedMethod is the longest method written to the access log; the
// standard ones have at most 7 characters.
const maxLoggedMethod = 32

// observe logs and measures every request. It logs the route pattern and the
// key id, never the key, the query string or the body.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	s.inflight.Inc()
	c.Next()
	s.inflight.Dec()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	code := c.Writer.Status()
	method := methodLabel(c.Request.Method)
	s.requests.WithLabelValues(method, route, strconv.Itoa(code)).Inc()
	took := time.Since(start).Seconds()
	s.duration.WithLabelValues(method, route).Observe(took)
	// Durations are logged as float seconds with the unit in the key: slog
	// would write a time.Duration as bare nanoseconds in JSON. The request's
	// id comes with the context (requestid.Handler). The method is the one
	// value here that the client picks freely, so it is logged cut short.
	attrs := []slog.Attr{
		slog.String("method", pipeline.ClipTo(c.Request.Method, maxLoggedMethod)), slog.String("route", route), slog.Int("status", code),
		slog.Float64("duration_s", took), slog.Int64("bytes_in", c.Request.ContentLength),
	}
	if v, ok := c.Get(ctxPrincipal); ok {
		if p := v.(principal); p.Operator != "" {
			attrs = append(attrs, slog.String("operator", p.Operator))
		} else if p.isClient() {
			attrs = append(attrs, slog.String("issuer", p.Issuer), slog.String("client_id", p.ClientID))
		} else {
			attrs = append(attrs, slog.String("key_id", p.ID))
		}
	}
	// Client errors are information, among them a client that went away
	// (499) or sent its body too slowly (408): neither is the server's fault.
	level := slog.LevelInfo
	switch {
	case isProbe(route) && code < 500:
		level = slog.LevelDebug // the orchestrator asks every few seconds; an unready answer logs its reason
	case code == http.StatusServiceUnavailable:
		level = slog.LevelWarn // draining or database down: expected, and reported by /health
	case code >= 500:
		level = slog.LevelError
	}
	s.log.LogAttrs(c.Request.Context(), level, "request", attrs...)
}

func (s *Server) health(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if err := s.deps.DB.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "health: database unreachable", slog.Any("err", err))
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "database": "unreachable"})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok", "database": "ok"})
}
