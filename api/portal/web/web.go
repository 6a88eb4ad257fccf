// Package web holds the German pages of the employee self-service portal:
// server-rendered templates, one stylesheet and one script, all embedded in
// the binary so that neither building nor running the portal needs Node.
//
// The handlers in api/portal fill the view types and call Render; the pages
// post their forms as JSON to the portal API with the CSRF header, so the
// templates carry no inline script, handler or style and work under the
// portal's strict Content-Security-Policy.
package web

import (
	"embed"
	"io"
	"net/http"
	"reflect"

	"github.com/schedbridge/schedbridge/api/webpage"
)

// Page is what every page gets.
type Page struct {
	Title      string // <h1> and <title> ("… – Mitarbeiterportal")
	Nav        string // active nav key: "uebersicht","urlaub","krankmeldung","bescheinigungen","verguetung","abmelden"; "" on sign-in pages
	User       *User  // nil on the sign-in pages (no nav then)
	CSRFCookie string // name of the CSRF cookie, rendered as <meta name="sb-csrf-cookie" content="…">
	CSRFHeader string // name of the CSRF request header, <meta name="sb-csrf-header" content="…">
	Notice     string // success banner, role="status"
	Error      string // error banner, role="alert"
	Data       any    // one of the page types below; nil on employee pages when the user has no employee record
}

// User is the signed-in user shown in the header.
type User struct {
	Name, Email string
	LoginMethod string // "sso" | "magic_link"
	Roles       []string
	HasEmployee bool
}

// Option is one choice of a select.
type Option struct{ Value, Label string }

// SignIn is the data of the sign-in page.
type SignIn struct {
	SSOURL       string // "" when SSO is not configured: the button is hidden
	MagicLinkAPI string // "" when magic links are not configured: the form is hidden
}

// MagicLanding is the data of the page a magic link opens.
type MagicLanding struct {
	RedeemAPI string
	Next      string
}

// Overview is the data of the start page.
type Overview struct {
	// Employee is nil for applicants without a personnel record.
	Employee *Employee

	Year, LeaveDaysPerYear, LeaveDaysRequested, LeaveDaysRemaining int
	OpenLeave, SickReports, OpenCertificates                       int
}

// Employee is the personnel record, already formatted (dd.mm.yyyy, "39,5").
type Employee struct {
	ID, Name, Email, Department, Position, EntryDate, State, WeeklyHours string
}

// Leave is the data of the leave page.
type Leave struct {
	API      string
	Types    []Option
	Requests []LeaveRow
}

// LeaveRow is one leave request.
type LeaveRow struct {
	Type, Start, End, Status, Comment string
	WorkingDays                       int
}

// Sick is the data of the sick-leave page.
type Sick struct {
	API     string
	Reports []SickRow
}

// SickRow is one sick-leave report.
type SickRow struct {
	Start, End, Comment, Reported string
	Certificate                   bool
}

// Certificates is the data of the certificate page.
type Certificates struct {
	API              string
	Types, Languages []Option
	Items            []CertRow
}

// CertRow is one certificate request.
type CertRow struct {
	ID int64

	Type, Purpose, Language, Status, Requested string
}

// Compensation is the data of the compensation page.
type Compensation struct {
	Rows                      []CompRow
	MonthlyTotal, YearlyTotal string // "" when masked
	Masked                    bool
	MaskNote                  string
}

// CompRow is one component of the compensation.
type CompRow struct {
	Name, Interval string
	Amount         string // "5.200,00 €", "" when masked
	Masked         bool
}

// SignOut is the data of the sign-out page.
type SignOut struct {
	LogoutAPI string
	Next      string
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// dataTypes names, for every page, the type its Data must have. Render
// refuses any other type, so a handler that passes the wrong view fails
// loudly instead of rendering an empty page. A nil Data is always allowed:
// it is how employee pages learn that the user has no employee record.
var dataTypes = map[string]reflect.Type{
	"anmelden":        reflect.TypeFor[SignIn](),
	"link":            reflect.TypeFor[MagicLanding](),
	"uebersicht":      reflect.TypeFor[Overview](),
	"urlaub":          reflect.TypeFor[Leave](),
	"krankmeldung":    reflect.TypeFor[Sick](),
	"bescheinigungen": reflect.TypeFor[Certificates](),
	"verguetung":      reflect.TypeFor[Compensation](),
	"abmelden":        reflect.TypeFor[SignOut](),
	"fehler":          nil,
}

// site is the portal's pages, parsed on first use.
var site = webpage.New(webpage.Site{
	Templates: templateFS, Static: staticFS, Layout: "layout.html", StaticURL: "/portal/static/", Pages: dataTypes,
	Nav: []webpage.NavItem{
		{Key: "uebersicht", Href: "/portal/", Label: "Übersicht"},
		{Key: "urlaub", Href: "/portal/urlaub", Label: "Urlaub"},
		{Key: "krankmeldung", Href: "/portal/krankmeldung", Label: "Krankmeldung"},
		{Key: "bescheinigungen", Href: "/portal/bescheinigungen", Label: "Bescheinigungen"},
		{Key: "verguetung", Href: "/portal/verguetung", Label: "Vergütung"},
		{Key: "abmelden", Href: "/portal/abmelden", Label: "Abmelden"},
	},
})

// view is what the templates execute with: the page and its name, which the
// layout needs to avoid showing the error of the error page twice.
type view struct {
	Page
	Name string
}

// Render writes page name with p. Names: "anmelden", "link", "uebersicht",
// "urlaub", "krankmeldung", "bescheinigungen", "verguetung", "abmelden",
// "fehler". The page is rendered into a buffer first, so that on an error
// nothing half-written reaches w.
func Render(w io.Writer, name string, p Page) error {
	return site.Render(w, name, p.Data, view{Page: p, Name: name})
}

// Static serves the files under static/; the caller mounts it under
// /portal/static/ with http.StripPrefix (see webpage.Set.Handler).
func Static() http.Handler { return site.Handler() }
