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
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"path"
	"reflect"
	"strings"
	"sync"
	"time"
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

// navItem is one entry of the main navigation.
type navItem struct{ Key, Href, Label string }

var navItems = []navItem{
	{"uebersicht", "/portal/", "Übersicht"},
	{"urlaub", "/portal/urlaub", "Urlaub"},
	{"krankmeldung", "/portal/krankmeldung", "Krankmeldung"},
	{"bescheinigungen", "/portal/bescheinigungen", "Bescheinigungen"},
	{"verguetung", "/portal/verguetung", "Vergütung"},
	{"abmelden", "/portal/abmelden", "Abmelden"},
}

// asset is one embedded static file with what its answers need.
type asset struct {
	body        []byte
	contentType string
	etag        string
	version     string // first hex digits of the SHA-256, used as ?v= in page links
}

// contentTypes are the types of the file kinds under static/; a file of
// another kind is not served, so nothing is ever sniffed.
var contentTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
	".png": "image/png",
	".ico": "image/x-icon",
}

// view is what the templates execute with: the page and its name, which the
// layout needs to avoid showing the error of the error page twice.
type view struct {
	Page
	Name string
}

type parsed struct {
	pages  map[string]*template.Template
	assets map[string]asset
}

// load parses every template and reads every asset once. The templates are
// embedded, so a failure here is a programming error that every test shows.
var load = sync.OnceValues(func() (*parsed, error) {
	assets, err := loadAssets()
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{
		"navItems": func() []navItem { return navItems },
		// asset is the versioned URL of a static file, so that browsers may
		// cache it for long and still see a changed file at once.
		"asset": func(name string) (string, error) {
			a, ok := assets[name]
			if !ok {
				return "", fmt.Errorf("web: no static file %q", name)
			}
			return "/portal/static/" + name + "?v=" + a.version, nil
		},
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("web: parsing the layout: %w", err)
	}
	pages := make(map[string]*template.Template, len(dataTypes))
	for name := range dataTypes {
		t, err := base.Clone()
		if err != nil {
			return nil, fmt.Errorf("web: cloning the layout for %s: %w", name, err)
		}
		if _, err := t.ParseFS(templateFS, "templates/"+name+".html"); err != nil {
			return nil, fmt.Errorf("web: parsing page %s: %w", name, err)
		}
		pages[name] = t
	}
	return &parsed{pages: pages, assets: assets}, nil
})

func loadAssets() (map[string]asset, error) {
	assets := map[string]asset{}
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return nil
		}
		body, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		h := hex.EncodeToString(sum[:])
		assets[strings.TrimPrefix(p, "static/")] = asset{body: body, contentType: ct, etag: `"` + h[:32] + `"`, version: h[:12]}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: reading static files: %w", err)
	}
	return assets, nil
}

// Render writes page name with p. Names: "anmelden", "link", "uebersicht",
// "urlaub", "krankmeldung", "bescheinigungen", "verguetung", "abmelden",
// "fehler". The page is rendered into a buffer first, so that on an error
// nothing half-written reaches w.
func Render(w io.Writer, name string, p Page) error {
	ps, err := load()
	if err != nil {
		return err
	}
	t, ok := ps.pages[name]
	if !ok {
		return fmt.Errorf("web: unknown page %q", name)
	}
	if p.Data != nil {
		want := dataTypes[name]
		if got := reflect.TypeOf(p.Data); want == nil || got != want {
			return fmt.Errorf("web: page %s cannot show data of type %T", name, p.Data)
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", view{Page: p, Name: name}); err != nil {
		return fmt.Errorf("web: rendering page %s: %w", name, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// Static serves the files under static/; the caller mounts it under
// /portal/static/ with http.StripPrefix. A request whose ?v= names the
// current version of the file may be cached for a year, since the pages
// link to a new URL when the file changes; any other request is revalidated
// with the ETag.
func Static() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps, err := load()
		if err != nil {
			http.Error(w, "static files unavailable", http.StatusInternalServerError)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		a, ok := ps.assets[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("ETag", a.etag)
		if r.URL.Query().Get("v") == a.version {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "public, no-cache")
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	})
}
