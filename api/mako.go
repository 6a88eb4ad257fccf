package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// MarketComm is the market communication with the DSOs (jobs.Mako).
type MarketComm interface {
	ImportRegistry(ctx context.Context, source string, r io.Reader) (mako.RegistryResult, int, error)
	Partners(ctx context.Context) ([]mako.Partner, error)
	Send(ctx context.Context, mpid string, st mako.Stream) (mako.Sent, error)
	Overview(ctx context.Context, tage int, ordnung string) (mako.Overview, error)
	Reconcile(ctx context.Context, tage int) (mako.Reconciliation, error)
	Vormerkungen(ctx context.Context) ([]mako.Vormerkung, error)
	Prelist(ctx context.Context, mpid string, st mako.Stream, reason string) (mako.Vormerkung, bool, error)
	DeleteVormerkung(ctx context.Context, mpid string, st mako.Stream) (mako.Vormerkung, error)
	SendPrelisted(ctx context.Context) ([]mako.SendResult, error)
	Sync(ctx context.Context) (mako.SyncReport, error)
	EDIErrors(ctx context.Context, limit int) ([]mako.EDIFile, error)
}

// makoRoutes registers the market communication. The views are the report
// key's to read as well; everything that writes takes a process key.
func (s *Server) makoRoutes(e *gin.Engine) {
	wired := s.needs(s.deps.Mako != nil, "the market communication")
	read := e.Group("/v1/process", s.allowOperators, s.requireScope(pipeline.ScopeProcess, pipeline.ScopeReport), s.rateLimit, wired)
	read.GET("/market-partners", s.getPartners)
	read.GET("/market-partners/overview", s.getOverview)
	read.GET("/mail/antworten-abgleich", s.getReconciliation)
	read.GET("/nachversand/vormerkungen", s.getVormerkungen)
	read.GET("/edifact/fehler", s.getEDIErrors)

	// Its writes are in the audit trail; the web console deletes
	// pre-listings with the operator's session.
	proc := e.Group("/v1/process", s.auditActions, s.allowOperators, s.requireScope(pipeline.ScopeProcess), s.rateLimit, wired)
	proc.PUT("/market-partners", s.putPartners)
	proc.POST("/market-partners/:mp_id/send", s.postSend)
	proc.POST("/nachversand/vormerkungen", s.postVormerkung)
	proc.DELETE("/nachversand/vormerkungen/:key", s.deleteVormerkung)
	proc.POST("/nachversand/senden", s.postNachversand)
	proc.POST("/mako/sync", s.postMakoSync)
}

var orderings = []string{mako.OrderStatus, mako.OrderKontakt}

func (s *Server) getOverview(c *gin.Context) {
	var problems []ingest.Problem
	tage := queryInt(c, "tage", 365, 1, 730, &problems)
	ordnung := queryEnum(c, "ordnung", mako.OrderStatus, orderings, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	ov, err := s.deps.Mako.Overview(c.Request.Context(), int(tage), ordnung)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, ov)
}

func (s *Server) getReconciliation(c *gin.Context) {
	var problems []ingest.Problem
	tage := queryInt(c, "tage", 7, 1, 90, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	r, err := s.deps.Mako.Reconcile(c.Request.Context(), int(tage))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

func (s *Server) getPartners(c *gin.Context) {
	ps, err := s.deps.Mako.Partners(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	if ps == nil {
		ps = []mako.Partner{}
	}
	c.JSON(http.StatusOK, gin.H{"partners": ps, "count": len(ps)})
}

// putPartners replaces the registry with the CSV export in the body.
func (s *Server) putPartners(c *gin.Context) {
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	res, skipped, err := s.deps.Mako.ImportRegistry(c.Request.Context(), "api", strings.NewReader(string(body)))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"result": res, "skipped_rows": skipped})
}

// mpIDPath reads the {mp_id} path parameter; a malformed one is a 422.
func mpIDPath(c *gin.Context, problems *[]ingest.Problem) string {
	id := c.Param("mp_id")
	if !mako.ValidMPID(id) {
		*problems = append(*problems, mpIDProblem([]string{"path", "mp_id"}, id))
	}
	return id
}

// mpIDProblem is pydantic's problem for an mp_id that is not 13 digits.
func mpIDProblem(loc []string, input string) ingest.Problem {
	return ingest.Problem{Type: "string_pattern_mismatch", Loc: loc,
		Msg: `String should match pattern '^\d{13}$'`, Input: input, Ctx: map[string]any{"pattern": `^\d{13}$`}}
}

var sendStreamNames = stringsOf(mako.SendStreams)

// streamParam reads a send stream from the query or a body field.
func streamParam(raw string, given bool, loc []string, problems *[]ingest.Problem) mako.Stream {
	if !given {
		*problems = append(*problems, missingProblem(loc))
		return ""
	}
	st, ok := mako.ParseSendStream(raw)
	if !ok {
		*problems = append(*problems, enumProblem(loc, raw, sendStreamNames))
	}
	return st
}

func (s *Server) postSend(c *gin.Context) {
	var problems []ingest.Problem
	id := mpIDPath(c, &problems)
	raw, given := c.GetQuery("stream")
	st := streamParam(raw, given, []string{"query", "stream"}, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	sent, err := s.deps.Mako.Send(c.Request.Context(), id, st)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, sent)
}

func (s *Server) getVormerkungen(c *gin.Context) {
	list, err := s.deps.Mako.Vormerkungen(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]vormerkungJSON, len(list))
	for i, v := range list {
		out[i] = vormerkungOf(v)
	}
	c.JSON(http.StatusOK, gin.H{"vormerkungen": out, "count": len(out)})
}

// vormerkungJSON is a pre-listing as the API shows it: section 2.8 plus its
// key, noted_at in RFC 3339 (UTC).
type vormerkungJSON struct {
	Key     string `json:"key"`
	MPID    string `json:"mp_id"`
	Stream  string `json:"stream"`
	Reason  string `json:"reason"`
	NotedAt string `json:"noted_at"`
	Name    string `json:"name"`
}

func vormerkungOf(v mako.Vormerkung) vormerkungJSON {
	return vormerkungJSON{Key: v.Key(), MPID: v.MPID, Stream: string(v.Stream), Reason: v.Reason,
		NotedAt: v.NotedAt.UTC().Format(time.RFC3339), Name: v.Name}
}

func (s *Server) postVormerkung(c *gin.Context) {
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var req struct {
		MPID   *string `json:"mp_id"`
		Stream *string `json:"stream"`
		Reason string  `json:"reason"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.fail(c, &ingest.SchemaError{Problems: []ingest.Problem{{Type: "json_invalid", Loc: []string{"body"},
			Msg: "JSON decode error", Input: map[string]any{}, Ctx: map[string]any{"error": err.Error()}}}})
		return
	}
	var problems []ingest.Problem
	var st mako.Stream
	switch {
	case req.MPID == nil:
		problems = append(problems, missingProblem([]string{"body", "mp_id"}))
	case !mako.ValidMPID(*req.MPID):
		problems = append(problems, mpIDProblem([]string{"body", "mp_id"}, *req.MPID))
	}
	if req.Stream == nil {
		problems = append(problems, missingProblem([]string{"body", "stream"}))
	} else {
		st = streamParam(*req.Stream, true, []string{"body", "stream"}, &problems)
	}
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	v, created, err := s.deps.Mako.Prelist(c.Request.Context(), *req.MPID, st, req.Reason)
	if err != nil {
		s.fail(c, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	c.JSON(code, vormerkungOf(v))
}

func (s *Server) deleteVormerkung(c *gin.Context) {
	key := c.Param("key")
	mpid, st, ok := mako.ParseVormerkungKey(key)
	if !ok {
		s.fail(c, &ingest.SchemaError{Problems: []ingest.Problem{{Type: "value_error", Loc: []string{"path", "key"},
			Msg:   "Value error, the key is '<mp_id>:<stream>' with a 13-digit mp_id and stream " + strings.Join(sendStreamNames, " or "),
			Input: key, Ctx: map[string]any{}}}})
		return
	}
	v, err := s.deps.Mako.DeleteVormerkung(c.Request.Context(), mpid, st)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, vormerkungOf(v))
}

func (s *Server) postNachversand(c *gin.Context) {
	res, err := s.deps.Mako.SendPrelisted(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	// Each pre-listing is shown as the queue shows it, with its key.
	type result struct {
		Vormerkung vormerkungJSON `json:"vormerkung"`
		Sent       *mako.Sent     `json:"sent,omitempty"`
		Error      string         `json:"error,omitempty"`
	}
	out := make([]result, len(res))
	sent := 0
	for i, r := range res {
		out[i] = result{Vormerkung: vormerkungOf(r.Vormerkung), Sent: r.Sent, Error: r.Error}
		if r.Sent != nil {
			sent++
		}
	}
	c.JSON(http.StatusOK, gin.H{"results": out, "sent": sent, "failed": len(res) - sent})
}

func (s *Server) postMakoSync(c *gin.Context) {
	rep, err := s.deps.Mako.Sync(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, rep)
}

func (s *Server) getEDIErrors(c *gin.Context) {
	var problems []ingest.Problem
	limit := queryInt(c, "limit", 100, 1, 1000, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	files, err := s.deps.Mako.EDIErrors(c.Request.Context(), int(limit))
	if err != nil {
		s.fail(c, err)
		return
	}
	if files == nil {
		files = []mako.EDIFile{}
	}
	c.JSON(http.StatusOK, gin.H{"files": files, "count": len(files)})
}
