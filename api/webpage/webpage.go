// Package webpage renders the server-side pages of the portal and of the
// operators' console: html/template pages that share one layout, and the
// static files they link to (stylesheets, scripts), all embedded in the
// binary so that neither building nor running needs Node or a CDN.
//
// Static files are linked with a ?v= version derived from their content, so
// that browsers may cache them for a year and still see a changed file at
// once.
package webpage

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

// Site describes one set of pages.
type Site struct {
	// Templates holds Layout and one file <name>.html per page; Static holds
	// the files under the directory "static".
	Templates fs.FS
	Static    fs.FS
	// Layout is the file (under "templates/") that defines the template
	// "layout", which every page executes.
	Layout string
	// Extra are static files given by content, by name, for files that
	// another package owns (the charts' stylesheet).
	Extra map[string]string
	// StaticURL is where Handler is mounted, e.g. "/portal/static/".
	StaticURL string
	// Pages names, for every page, the type of its data. Render refuses
	// any other type, so that a handler that passes the wrong view fails
	// loudly instead of rendering an empty page; nil data always passes.
	Pages map[string]reflect.Type
	// Nav is the main navigation, which the templates range over with the
	// function "navItems".
	Nav []NavItem
	// Funcs are the templates' functions beside "asset" and "navItems".
	Funcs template.FuncMap
}

// NavItem is one entry of a main navigation: Key names the page that marks
// it current.
type NavItem struct{ Key, Href, Label string }

// Set is a parsed Site.
type Set struct {
	site Site
	load func() (*parsed, error)
}

type parsed struct {
	pages  map[string]*template.Template
	assets map[string]asset
}

// shared holds the template parts that every site's layout may call, such
// as the main navigation ("main-nav", given the page's data).
//
//go:embed templates/shared.html
var shared embed.FS

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

// New prepares a site. Its templates are parsed on first use, once: they
// are embedded, so a failure is a programming error that every test shows.
func New(site Site) *Set {
	s := &Set{site: site}
	s.load = sync.OnceValues(s.parse)
	return s
}

func (s *Set) parse() (*parsed, error) {
	assets, err := s.assets()
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{
		"asset": func(name string) (string, error) {
			a, ok := assets[name]
			if !ok {
				return "", fmt.Errorf("webpage: no static file %q", name)
			}
			return s.site.StaticURL + name + "?v=" + a.version, nil
		},
		"navItems": func() []NavItem { return s.site.Nav },
	}
	for k, f := range s.site.Funcs {
		funcs[k] = f
	}
	base, err := template.New(s.site.Layout).Funcs(funcs).ParseFS(shared, "templates/shared.html")
	if err != nil {
		return nil, fmt.Errorf("webpage: parsing the shared templates: %w", err)
	}
	if base, err = base.ParseFS(s.site.Templates, "templates/"+s.site.Layout); err != nil {
		return nil, fmt.Errorf("webpage: parsing the layout: %w", err)
	}
	pages := make(map[string]*template.Template, len(s.site.Pages))
	for name := range s.site.Pages {
		t, err := base.Clone()
		if err != nil {
			return nil, fmt.Errorf("webpage: cloning the layout for %s: %w", name, err)
		}
		if _, err := t.ParseFS(s.site.Templates, "templates/"+name+".html"); err != nil {
			return nil, fmt.Errorf("webpage: parsing page %s: %w", name, err)
		}
		pages[name] = t
	}
	return &parsed{pages: pages, assets: assets}, nil
}

func (s *Set) assets() (map[string]asset, error) {
	assets := map[string]asset{}
	add := func(name string, body []byte) {
		ct, ok := contentTypes[path.Ext(name)]
		if !ok {
			return
		}
		sum := sha256.Sum256(body)
		h := hex.EncodeToString(sum[:])
		assets[name] = asset{body: body, contentType: ct, etag: `"` + h[:32] + `"`, version: h[:12]}
	}
	err := fs.WalkDir(s.site.Static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(s.site.Static, p)
		if err != nil {
			return err
		}
		add(strings.TrimPrefix(p, "static/"), body)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webpage: reading static files: %w", err)
	}
	for name, body := range s.site.Extra {
		add(name, []byte(body))
	}
	return assets, nil
}

// Render writes page name: the template "layout" executed with view, after
// checking that data (the page's own part of view) has the page's type. The
// page is rendered into a buffer first, so that on an error nothing
// half-written reaches w.
func (s *Set) Render(w io.Writer, name string, data, view any) error {
	ps, err := s.load()
	if err != nil {
		return err
	}
	t, ok := ps.pages[name]
	if !ok {
		return fmt.Errorf("webpage: unknown page %q", name)
	}
	if data != nil {
		want := s.site.Pages[name]
		if got := reflect.TypeOf(data); want == nil || got != want {
			return fmt.Errorf("webpage: page %s cannot show data of type %T", name, data)
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", view); err != nil {
		return fmt.Errorf("webpage: rendering page %s: %w", name, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// Handler serves the files under static/; the caller mounts it under
// StaticURL with http.StripPrefix. A request whose ?v= names the current
// version of the file may be cached for a year, since the pages link to a
// new URL when the file changes; any other request is revalidated with the
// ETag.
func (s *Set) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps, err := s.load()
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

// SetPageHeaders sets the security headers of a server-rendered page: a
// Content-Security-Policy that allows scripts, styles and connections from
// this origin only (the pages have no inline script, handler or style), no
// framing, no referrer, and no caching of what the page shows.
func SetPageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}
