package api

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/databody"
	"github.com/schedbridge/schedbridge/pipeline"
)

// submission is what the four data endpoints have in common once a body has
// been decoded: a hash, a validate_only flag, counts, and how to stage it.
type submission struct {
	inputHash    string
	validateOnly bool
	counts       map[string]int
	stage        func(ctx context.Context, st Staging, a *pipeline.AuditEntry) (pipeline.StageResult, error)
}

// Ack is the acknowledgment of a data submission.
type Ack struct {
	InputHash  string         `json:"input_hash"`
	Status     string         `json:"status"`
	ReceivedAt time.Time      `json:"received_at"`
	Portfolio  string         `json:"portfolio"`
	Version    int            `json:"version,omitempty"`
	Counts     map[string]int `json:"counts"`
}

// submit runs the common path: read the body under the limit, decode and
// validate it against the caller's portfolio, then stage it (or not, for
// validate_only) and acknowledge.
func (s *Server) submit(c *gin.Context, decode func(body []byte, r ingest.Rules) (submission, error)) {
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	p := portfolioOf(c)
	sub, err := decode(body, ingest.Rules{Active: p.Active()})
	if err != nil {
		s.fail(c, err)
		return
	}
	a := auditOf(c)
	a.InputHash = sub.inputHash
	a.Counts = sub.counts
	a.StatusCode = http.StatusOK
	ack := Ack{InputHash: sub.inputHash, ReceivedAt: a.ReceivedAt, Portfolio: p.ID, Counts: sub.counts}
	if sub.validateOnly {
		ack.Status = string(pipeline.Validated)
		a.Outcome = ack.Status
		c.JSON(http.StatusOK, ack)
		return
	}
	res, err := sub.stage(c.Request.Context(), s.deps.Staging, a)
	if err != nil {
		s.fail(c, err)
		return
	}
	ack.Status, ack.Version = string(res.Status), res.Version
	ack.Counts = map[string]int{"created": res.Created, "replaced": res.Replaced, "unchanged": res.Unchanged}
	for k, v := range sub.counts {
		ack.Counts[k] = v
	}
	c.JSON(http.StatusOK, ack)
}

func (s *Server) postForecast(c *gin.Context) {
	s.submit(c, func(body []byte, r ingest.Rules) (submission, error) {
		f, err := databody.DecodeForecast(body, r)
		if err != nil {
			return submission{}, err
		}
		values := 0
		for _, se := range f.Forecast.Series {
			values += len(se.Values)
		}
		return submission{f.InputHash, f.ValidateOnly, map[string]int{"series": len(f.Forecast.Series), "values": values},
			func(ctx context.Context, st Staging, a *pipeline.AuditEntry) (pipeline.StageResult, error) {
				return st.StageForecast(ctx, a, f.Forecast, f.Canonical)
			}}, nil
	})
}

func (s *Server) putMasterData(c *gin.Context) {
	s.submit(c, func(body []byte, r ingest.Rules) (submission, error) {
		m, err := databody.DecodeMasterData(body, r)
		if err != nil {
			return submission{}, err
		}
		slices := 0
		for _, l := range m.Locations {
			slices += len(l.Slices)
		}
		return submission{m.InputHash, m.ValidateOnly, map[string]int{"locations": len(m.Locations), "slices": slices},
			func(ctx context.Context, st Staging, a *pipeline.AuditEntry) (pipeline.StageResult, error) {
				return st.StageLocations(ctx, a, m.Locations)
			}}, nil
	})
}

func (s *Server) postMeteredData(c *gin.Context) {
	s.submit(c, func(body []byte, r ingest.Rules) (submission, error) {
		m, err := databody.DecodeMeteredData(body, r)
		if err != nil {
			return submission{}, err
		}
		values := 0
		for _, e := range m.Entries {
			values += len(e.Values)
		}
		return submission{m.InputHash, m.ValidateOnly, map[string]int{"entries": len(m.Entries), "values": values},
			func(ctx context.Context, st Staging, a *pipeline.AuditEntry) (pipeline.StageResult, error) {
				return st.StageMetered(ctx, a, m.Entries)
			}}, nil
	})
}

func (s *Server) postProfiles(c *gin.Context) {
	s.submit(c, func(body []byte, r ingest.Rules) (submission, error) {
		m, err := databody.DecodeProfiles(body, r)
		if err != nil {
			return submission{}, err
		}
		values := 0
		for _, e := range m.Entries {
			values += len(e.ValuesKWh)
		}
		return submission{m.InputHash, m.ValidateOnly, map[string]int{"entries": len(m.Entries), "values": values},
			func(ctx context.Context, st Staging, a *pipeline.AuditEntry) (pipeline.StageResult, error) {
				return st.StageProfiles(ctx, a, m.Entries)
			}}, nil
	})
}

var (
	maloPattern = regexp.MustCompile(`^\d{11}$`)
	hashPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// pathPattern validates a path parameter the way the body fields are
// validated, so a bad parameter gets the same 422 shape.
func pathPattern(c *gin.Context, name string, re *regexp.Regexp) (string, bool) {
	v := c.Param(name)
	if re.MatchString(v) {
		return v, true
	}
	c.AbortWithStatusJSON(http.StatusUnprocessableEntity, gin.H{"detail": []ingest.Problem{{
		Type: "string_pattern_mismatch", Loc: []string{"path", name}, Input: v,
		Msg: "String should match pattern '" + re.String() + "'", Ctx: map[string]any{"pattern": re.String()},
	}}})
	return "", false
}

func (s *Server) pathDay(c *gin.Context) (pipeline.Day, bool) {
	d, err := ingest.PathDay("delivery_day", c.Param("delivery_day"))
	if err != nil {
		s.fail(c, err)
		return pipeline.Day{}, false
	}
	return d, true
}

func (s *Server) getForecast(c *gin.Context) {
	day, ok := s.pathDay(c)
	if !ok {
		return
	}
	version := 0
	if v := c.Query("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			c.AbortWithStatusJSON(http.StatusUnprocessableEntity, gin.H{"detail": []ingest.Problem{{
				Type: "greater_than_equal", Loc: []string{"query", "version"}, Input: v,
				Msg: "Input should be greater than or equal to 1", Ctx: map[string]any{"ge": 1},
			}}})
			return
		}
		version = n
	}
	f, err := s.deps.Staging.Forecast(c.Request.Context(), portfolioOf(c).ID, day, version)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, f)
}

func (s *Server) getForecastVersions(c *gin.Context) {
	day, ok := s.pathDay(c)
	if !ok {
		return
	}
	vs, err := s.deps.Staging.ForecastVersions(c.Request.Context(), portfolioOf(c).ID, day)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"portfolio": portfolioOf(c).ID, "delivery_day": day, "versions": vs})
}

func (s *Server) getMasterData(c *gin.Context) {
	malo, ok := pathPattern(c, "malo", maloPattern)
	if !ok {
		return
	}
	l, err := s.deps.Staging.Location(c.Request.Context(), portfolioOf(c).ID, malo)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, l)
}

func (s *Server) getSubmission(c *gin.Context) {
	hash, ok := pathPattern(c, "input_hash", hashPattern)
	if !ok {
		return
	}
	entries, err := s.deps.Audit.AuditByHash(c.Request.Context(), portfolioOf(c).ID, hash)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"input_hash": hash, "portfolio": portfolioOf(c).ID, "requests": entries})
}
