// Package consoleweb holds the German pages of the operators' web console
// under /console/: server-rendered templates, one stylesheet and one script,
// embedded in the binary (package webpage), so the console works offline,
// needs no build step and no CDN. The charts are SVG rendered on the server
// (package chart).
//
// The handlers in package api fill the view types and call Render. The
// pages carry no inline script, handler or style, so they run under the
// console's strict Content-Security-Policy. Their actions (start, retry,
// inbox retry, Nachversand delete) are forms that the script sends as JSON
// to the console API with the CSRF header and an idempotency key rendered
// into the form; the answers of the API are the only source of truth.
package consoleweb

import (
	"embed"
	"html/template"
	"io"
	"net/http"
	"reflect"

	"github.com/schedbridge/schedbridge/api/consoleweb/chart"
	"github.com/schedbridge/schedbridge/api/webpage"
)

// Page is what every page gets.
type Page struct {
	Title      string // <h1> and <title> ("… – Leitstand")
	Nav        string // active nav key, "" on the sign-in and error pages
	User       *User  // nil on the sign-in page (no nav then)
	CSRFCookie string // name of the CSRF cookie, <meta name="sb-csrf-cookie">
	CSRFHeader string // name of the CSRF header, <meta name="sb-csrf-header">
	Notice     string // success banner, role="status"
	Error      string // error banner, role="alert"
	// Live opens the console's event stream: new events are listed in the
	// live region and the page's content is refreshed in place.
	Live bool
	// LiveAfter is the newest event when the page was rendered: the stream
	// starts after it, so that the page lists only what happens next.
	LiveAfter int64
	Data      any
}

// User is the signed-in operator shown in the header.
type User struct{ Name, Email string }

// Option is one choice of a select or a filter.
type Option struct {
	Value, Label string
	Selected     bool
}

// Badge is a state shown as text with a colour: Class is one of ok, warn,
// bad, run, muted. The text alone carries the meaning.
type Badge struct{ Label, Class string }

// Action is a button that sends one request to the console API. Body is a
// JSON object (empty for none); Key is the idempotency key rendered with
// the page, so that a second click, or a click after a lost answer, names
// the same action.
type Action struct {
	Method, URL, Body, Key, Label string
	// Confirm, when set, is asked before the request is sent.
	Confirm string
}

// SignIn is the data of the sign-in page.
type SignIn struct{ SSOURL string }

// Forbidden is the data of the 403 page.
type Forbidden struct {
	Email     string
	MagicLink bool // signed in by magic link: the console needs single sign-on
}

// Situation is the data of the Lage page.
type Situation struct {
	Day, DayISO, PrevISO, NextISO string
	QuarterHours                  int
	Deadline, DeadlineISO         string
	Countdown                     string
	Overdue                       bool
	Chain                         Badge
	Stages                        []StageRow
	Start                         Action
	Areas                         []AreaChart
	TSO                           []TSORow
	Inbox                         *InboxCounts
	RedPartners                   *int
	Prices                        []PriceGap
}

// StageRow is a stage of the chain with its latest run of the day.
type StageRow struct {
	Stage, Label    string
	State           Badge
	RunURL          string
	Attempt         int
	Started, Ended  string
	Error           string
	Retry, StartOne *Action
}

// AreaChart is one control area's forecast, position and open position.
type AreaChart struct {
	Area, ID string
	Chart    template.HTML
	Rows     []QHRow
}

// QHRow is one quarter-hour of the table alternative of a chart.
type QHRow struct{ Time, Forecast, Position, Open string }

// TSORow is the latest schedule version of a portfolio and control area.
type TSORow struct {
	Portfolio, Area, TSO string
	Version              int
	State                Badge
	Answer, AnswerAt     string
	Reasons              []string
}

// InboxCounts is the inbox backlog.
type InboxCounts struct {
	Pending                      int
	PendingMore                  bool
	Oldest                       string
	Processing, Failed, Rejected int
}

// PriceGap is a day with quarter-hours missing a price.
type PriceGap struct {
	Kind, Day   string
	Missing, Of int
}

// Runs is the data of the Läufe page.
type Runs struct {
	Stages, Statuses, Triggers []Option
	Day                        string
	Rows                       []RunRow
	NextURL                    string
	StartStages                []Option
	StartDay                   string
	StartKey                   string
}

// RunRow is one run.
type RunRow struct {
	ID                     int64
	URL                    string
	Stage, Day             string
	Status                 Badge
	Trigger                string
	Attempt                int
	Started, Duration, Err string
	Retry                  *Action
}

// Run is the data of one run's page.
type Run struct {
	RunRow
	Parent string
	Stages []StageAttempts
	Log    []LogLine
}

// StageAttempts are a chain's attempts of one stage.
type StageAttempts struct {
	Label    string
	Status   Badge
	Attempts []RunRow
}

// LogLine is one line a run logged.
type LogLine struct{ Time, Level, Message, Attrs string }

// Inbox is the data of the Eingang page.
type Inbox struct {
	States  []Option
	State   string
	Rows    []InboxRow
	NextURL string
}

// InboxRow is one file.
type InboxRow struct {
	File, Portfolio, Kind, Name string
	Size                        string
	State                       Badge
	Attempts                    int
	Time                        string
	Reason                      string
	Problems                    []FileProblem
	MoreProblems                int
	ReceiptURL                  string
	Retry                       *Action
}

// FileProblem is one finding in a rejected file.
type FileProblem struct{ Line, Column, Message string }

// Schedules is the data of the Fahrpläne page.
type Schedules struct {
	Day, DayISO, PrevISO, NextISO, Deadline string
	Threads                                 []Thread
}

// Thread is every version of one portfolio and control area.
type Thread struct {
	Portfolio, Area, TSO string
	Status               Badge
	Versions             []ScheduleVersion
}

// ScheduleVersion is one version with its answers.
type ScheduleVersion struct {
	Version         int
	MessageID, Sent string
	Status          Badge
	Answers         []Answer
}

// Answer is one answer of a TSO.
type Answer struct {
	Kind, At string
	Status   Badge
	File     string
	Reasons  []string
}

// Partners is the data of the Marktpartner page.
type Partners struct {
	Kontakt     bool // ordered by last contact instead of status
	ToggleURL   string
	ToggleLabel string
	Stand       string
	Counts      []Count
	Groups      []PartnerGroup
	Queue       []QueueRow
}

// Count is the number of partners in a status.
type Count struct {
	Badge Badge
	N     int
}

// PartnerGroup is the partners of one control area.
type PartnerGroup struct {
	Area string
	Rows []PartnerRow
}

// PartnerRow is one market partner.
type PartnerRow struct {
	MPID, Name  string
	Status      Badge
	Reasons     []string
	Open        string
	LastContact string
}

// QueueRow is one entry of the Nachversand queue.
type QueueRow struct {
	MPID, Name, Stream, Reason, Noted string
	Delete                            Action
}

// Replies is the data of the Antworten page.
type Replies struct {
	Days int
	Rows []ReplyRow
}

// ReplyRow is one received reply.
type ReplyRow struct {
	Date, Sender, Subject, Partner string
	Verdict                        Badge
	Citations                      []string
	Open                           string
}

// Calculation is the data of the Kalkulation page.
type Calculation struct {
	Von, Bis string
	// Chart shows the costs per day (EUR), Surcharge the Aufschlag (ct/kWh).
	Chart, Surcharge template.HTML
	Rows             []CalcRow
	Sum              CalcRow
	Complete         bool
	Notes            []string
	CSVURL           string
	Portfolio        string
}

// CalcRow is one day (or the sum) of the period calculation; a money figure
// is "fehlt" when a price it needs is missing.
type CalcRow struct {
	Day                                   string
	Customers, Balancing, Cost, Surcharge string
	MissingSpot, MissingReBAP             int
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// dataTypes names the data type of every page.
var dataTypes = map[string]reflect.Type{
	"anmelden":     reflect.TypeFor[SignIn](),
	"verboten":     reflect.TypeFor[Forbidden](),
	"fehler":       nil,
	"lage":         reflect.TypeFor[Situation](),
	"laeufe":       reflect.TypeFor[Runs](),
	"lauf":         reflect.TypeFor[Run](),
	"eingang":      reflect.TypeFor[Inbox](),
	"fahrplaene":   reflect.TypeFor[Schedules](),
	"marktpartner": reflect.TypeFor[Partners](),
	"antworten":    reflect.TypeFor[Replies](),
	"kalkulation":  reflect.TypeFor[Calculation](),
}

var site = webpage.New(webpage.Site{
	Templates: templateFS, Static: staticFS, Layout: "layout.html", StaticURL: "/console/static/", Pages: dataTypes,
	Extra: map[string]string{"chart.css": chart.CSS},
	Nav: []webpage.NavItem{
		{Key: "lage", Href: "/console/lage", Label: "Lage"},
		{Key: "laeufe", Href: "/console/laeufe", Label: "Läufe"},
		{Key: "eingang", Href: "/console/eingang", Label: "Eingang"},
		{Key: "fahrplaene", Href: "/console/fahrplaene", Label: "Fahrpläne"},
		{Key: "marktpartner", Href: "/console/marktpartner", Label: "Marktpartner"},
		{Key: "antworten", Href: "/console/antworten", Label: "Antworten"},
		{Key: "kalkulation", Href: "/console/kalkulation", Label: "Kalkulation"},
	},
	Funcs: template.FuncMap{"deref": func(p *int) int { return *p }},
})

// Render writes page name with p; see webpage.Set.Render.
func Render(w io.Writer, name string, p Page) error { return site.Render(w, name, p.Data, p) }

// Static serves the files under static/, mounted under /console/static/.
func Static() http.Handler { return site.Handler() }
