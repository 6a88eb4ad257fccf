package api

import (
	"context"
	"mime"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/marketdata"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/pipeline/price"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// Marktdaten keeps the customer ramp-up snapshot, the series activations
// and the market prices (jobs.Marktdaten).
type Marktdaten interface {
	PutSnapshot(ctx context.Context, body []byte, keyID string) (zeitreihen.SnapshotResult, error)
	RampUp(ctx context.Context, stichtag pipeline.Day) (zeitreihen.View, error)
	Snapshots(ctx context.Context, limit int) ([]zeitreihen.StoredSnapshot, error)
	Tree(ctx context.Context, stichtag pipeline.Day, f zeitreihen.Filter) (zeitreihen.Marktrollen, error)
	ImportActivations(ctx context.Context, recs []zeitreihen.Activation, source string) (zeitreihen.ActivationImport, error)
	Activations(ctx context.Context) ([]zeitreihen.StoredActivation, error)
	ImportPrices(ctx context.Context, kind price.Kind, data []byte, source string) (price.ImportResult, error)
	Prices(ctx context.Context, kind price.Kind, from, to time.Time) ([]price.Point, error)
}

// Calculator calculates a period from what the kalkulation stage
// materialized (jobs.Runner).
type Calculator interface {
	Kalkulation(ctx context.Context, portfolio string, from, to pipeline.Day) (kalkulation.Result, error)
}

// marktdatenRoutes registers the ramp-up, the Zeitreihen tree, the prices
// and the period calculation. The ramp-up snapshot is sent with the report
// key (or a process key), and the report key may read the views; imports
// take a process key.
func (s *Server) marktdatenRoutes(e *gin.Engine) {
	wired := s.needs(s.deps.Marktdaten != nil, "the market data")
	calc := s.needs(s.deps.Calculator != nil, "the period calculation")
	read := e.Group("/v1/process", s.requireScope(pipeline.ScopeProcess, pipeline.ScopeReport), s.rateLimit)
	read.POST("/kundenhochlauf/quellstand", wired, s.postQuellstand)
	read.GET("/kundenhochlauf", wired, s.getKundenhochlauf)
	read.GET("/kundenhochlauf/historie", wired, s.getHochlaufHistorie)
	read.GET("/marktrollen", wired, s.getMarktrollen)
	read.GET("/kalkulation", calc, s.getKalkulation)

	proc := e.Group("/v1/process", s.requireScope(pipeline.ScopeProcess), s.rateLimit, wired)
	proc.PUT("/zeitreihen/aktivierungen", s.putAktivierungen)
	proc.GET("/zeitreihen/aktivierungen", s.getAktivierungen)
	proc.PUT("/prices/:kind", s.putPrices)
	proc.GET("/prices/:kind", s.getPrices)
}

func (s *Server) postQuellstand(c *gin.Context) {
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := s.deps.Marktdaten.PutSnapshot(c.Request.Context(), body, principalOf(c).ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

// stichtag reads the key day of a view, today in Europe/Berlin by default.
func (s *Server) stichtag(c *gin.Context, problems *[]ingest.Problem) pipeline.Day {
	d, given := queryDay(c, "stichtag", problems)
	if !given {
		return pipeline.DayOf(s.now())
	}
	return d
}

func (s *Server) getKundenhochlauf(c *gin.Context) {
	var problems []ingest.Problem
	day := s.stichtag(c, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	v, err := s.deps.Marktdaten.RampUp(c.Request.Context(), day)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// HochlaufHistorie is the answer of GET /v1/process/kundenhochlauf/historie.
type HochlaufHistorie struct {
	Snapshots []HochlaufStand `json:"snapshots"`
}

// HochlaufStand is one stored snapshot without its entries.
type HochlaufStand struct {
	Stand       time.Time  `json:"stand"`
	Quelle      string     `json:"quelle"`
	Hash        string     `json:"hash"`
	EmpfangenAt time.Time  `json:"empfangen_at"`
	ErsetztAt   *time.Time `json:"ersetzt_at"`
}

func (s *Server) getHochlaufHistorie(c *gin.Context) {
	var problems []ingest.Problem
	limit := queryInt(c, "limit", 50, 1, 1000, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	list, err := s.deps.Marktdaten.Snapshots(c.Request.Context(), int(limit))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := HochlaufHistorie{Snapshots: make([]HochlaufStand, 0, len(list))}
	for _, st := range list {
		out.Snapshots = append(out.Snapshots, HochlaufStand{Stand: st.Stand, Quelle: st.Quelle, Hash: st.Hash,
			EmpfangenAt: st.ReceivedAt, ErsetztAt: st.Superseded})
	}
	c.JSON(http.StatusOK, out)
}

// Value sets of the tree's filters and of the price kinds.
var (
	roleNames  = stringsOf(zeitreihen.Roles)
	stateNames = stringsOf(zeitreihen.States)
	areaNames  = stringsOf(pipeline.ControlAreas)
	priceKinds = stringsOf(price.Kinds)
)

func (s *Server) getMarktrollen(c *gin.Context) {
	var problems []ingest.Problem
	day := s.stichtag(c, &problems)
	f := zeitreihen.Filter{
		Netzbetreiber:       c.Query("netzbetreiber"),
		Bilanzierungsgebiet: c.Query("bilanzierungsgebiet"),
	}
	if _, ok := c.GetQuery("netzbetreiber"); ok && !mako.ValidMPID(f.Netzbetreiber) {
		problems = append(problems, mpIDProblem([]string{"query", "netzbetreiber"}, f.Netzbetreiber))
	}
	if _, ok := c.GetQuery("bilanzierungsgebiet"); ok && !pipeline.ValidEIC(f.Bilanzierungsgebiet) {
		problems = append(problems, ingest.Problem{Type: "string_pattern_mismatch", Loc: []string{"query", "bilanzierungsgebiet"},
			Msg: "String should be a 16-character EIC", Input: f.Bilanzierungsgebiet, Ctx: map[string]any{}})
	}
	f.Regelzone = pipeline.ControlArea(queryEnum(c, "regelzone", "", areaNames, &problems))
	f.Marktrolle = zeitreihen.Role(queryEnum(c, "marktrolle", "", roleNames, &problems))
	f.Zustand = zeitreihen.State(queryEnum(c, "zustand", "", stateNames, &problems))
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	tree, err := s.deps.Marktdaten.Tree(c.Request.Context(), day, f)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, tree)
}

func (s *Server) putAktivierungen(c *gin.Context) {
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var recs []zeitreihen.Activation
	if isCSV(c) {
		recs, err = marketdata.DecodeActivationsCSV(body)
	} else {
		recs, err = marketdata.DecodeActivations(body)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := s.deps.Marktdaten.ImportActivations(c.Request.Context(), recs, "api")
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

// isCSV reports whether the request body is declared as CSV.
func isCSV(c *gin.Context) bool {
	mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	return mt == "text/csv"
}

// AktivierungenList is the answer of GET /v1/process/zeitreihen/aktivierungen.
type AktivierungenList struct {
	Aktivierungen []zeitreihen.StoredActivation `json:"aktivierungen"`
}

func (s *Server) getAktivierungen(c *gin.Context) {
	list, err := s.deps.Marktdaten.Activations(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	if list == nil {
		list = []zeitreihen.StoredActivation{}
	}
	c.JSON(http.StatusOK, AktivierungenList{Aktivierungen: list})
}

// priceKind reads the {kind} path parameter.
func priceKind(c *gin.Context, problems *[]ingest.Problem) price.Kind {
	raw := c.Param("kind")
	k, err := price.ParseKind(raw)
	if err != nil {
		*problems = append(*problems, enumProblem([]string{"path", "kind"}, raw, priceKinds))
	}
	return k
}

func (s *Server) putPrices(c *gin.Context) {
	var problems []ingest.Problem
	kind := priceKind(c, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := s.deps.Marktdaten.ImportPrices(c.Request.Context(), kind, body, "api")
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

// PriceList is the answer of GET /v1/process/prices/{kind}.
type PriceList struct {
	Kind   price.Kind    `json:"kind"`
	Von    pipeline.Day  `json:"von"`
	Bis    pipeline.Day  `json:"bis"`
	Points []price.Point `json:"points"`
	// Missing counts the quarter-hours of the period without a price.
	Missing int `json:"missing"`
}

func (s *Server) getPrices(c *gin.Context) {
	var problems []ingest.Problem
	kind := priceKind(c, &problems)
	von, bis := s.period(c, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	points, err := s.deps.Marktdaten.Prices(c.Request.Context(), kind, von.Start().UTC(), bis.End().UTC())
	if err != nil {
		s.fail(c, err)
		return
	}
	if points == nil {
		points = []price.Point{}
	}
	n := 0
	for d := von; !bis.Before(d); d = d.AddDays(1) {
		n += d.Intervals()
	}
	c.JSON(http.StatusOK, PriceList{Kind: kind, Von: von, Bis: bis, Points: points, Missing: n - len(points)})
}

// period reads von and bis: bis defaults to yesterday (Europe/Berlin), von
// to the first day of bis's month; von <= bis and at most 31 days.
func (s *Server) period(c *gin.Context, problems *[]ingest.Problem) (pipeline.Day, pipeline.Day) {
	n := len(*problems)
	von, bis := kalkulation.DefaultPeriod(pipeline.DayOf(s.now()))
	if d, given := queryDay(c, "bis", problems); given {
		bis = d
		von = pipeline.NewDay(bis.Year, bis.Month, 1)
	}
	if d, given := queryDay(c, "von", problems); given {
		von = d
	}
	if len(*problems) > n {
		return von, bis
	}
	if err := kalkulation.CheckPeriod(von, bis); err != nil {
		*problems = append(*problems, ingest.Problem{Type: "value_error", Loc: []string{"query", "bis"},
			Msg: "Value error, " + pipeline.MessageOf(err), Input: bis.String(),
			Ctx: map[string]any{"von": von.String(), "max_days": kalkulation.MaxDays}})
	}
	return von, bis
}

func (s *Server) getKalkulation(c *gin.Context) {
	var problems []ingest.Problem
	portfolio, err := scopedPortfolio(c, false, &problems)
	if err != nil {
		s.fail(c, err)
		return
	}
	von, bis := s.period(c, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	if err := s.knownPortfolio(c, portfolio); err != nil {
		s.fail(c, err)
		return
	}
	res, err := s.deps.Calculator.Kalkulation(c.Request.Context(), portfolio, von, bis)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, KalkulationReport{Portfolio: portfolio, Result: res})
}

// KalkulationReport is the answer of GET /v1/process/kalkulation.
type KalkulationReport struct {
	Portfolio string `json:"portfolio"` // "" for all portfolios
	kalkulation.Result
}
