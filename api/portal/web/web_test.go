package web

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Sample data as the handlers fill it.

func sampleUser(method string) *User {
	return &User{Name: "Erika Mustermann", Email: "erika@example.de", LoginMethod: method, Roles: []string{"employee"}, HasEmployee: true}
}

func basePage(title, nav string, u *User) Page {
	return Page{Title: title, Nav: nav, User: u, CSRFCookie: "__Host-sb_csrf", CSRFHeader: "X-CSRF-Token"}
}

var (
	sampleEmployee = &Employee{ID: "P-1042", Name: "Erika Mustermann", Email: "erika@example.de", Department: "Netzbetrieb",
		Position: "Ingenieurin", EntryDate: "01.04.2019", State: "NW", WeeklyHours: "39,5"}
	sampleOverview = Overview{Employee: sampleEmployee, Year: 2026, LeaveDaysPerYear: 30, LeaveDaysRequested: 12,
		LeaveDaysRemaining: 18, OpenLeave: 2, SickReports: 1, OpenCertificates: 1}
	sampleLeave = Leave{API: "/api/v1/portal/leave-requests",
		Types: []Option{{"erholungsurlaub", "Erholungsurlaub"}, {"sonderurlaub", "Sonderurlaub"}},
		Requests: []LeaveRow{
			{Type: "Erholungsurlaub", Start: "03.08.2026", End: "14.08.2026", Status: "Beantragt", Comment: "Sommer", WorkingDays: 10},
			{Type: "Sonderurlaub", Start: "02.10.2026", End: "02.10.2026", Status: "Beantragt", WorkingDays: 1},
		}}
	sampleSick = Sick{API: "/api/v1/portal/sick-leave-reports", Reports: []SickRow{
		{Start: "12.01.2026", End: "16.01.2026", Reported: "12.01.2026", Certificate: true, Comment: "Grippe"},
		{Start: "02.03.2026", End: "02.03.2026", Reported: "02.03.2026"},
	}}
	sampleCerts = Certificates{API: "/api/v1/portal/certificates",
		Types:     []Option{{"arbeitsbescheinigung", "Arbeitsbescheinigung"}, {"zwischenzeugnis", "Zwischenzeugnis"}},
		Languages: []Option{{"de", "Deutsch"}, {"en", "Englisch"}},
		Items:     []CertRow{{ID: 7, Type: "Zwischenzeugnis", Purpose: "Bewerbung", Language: "Deutsch", Status: "In Bearbeitung", Requested: "05.02.2026"}}}
	sampleComp = Compensation{Rows: []CompRow{
		{Name: "Grundgehalt", Interval: "monatlich", Amount: "5.200,00 €"},
		{Name: "13. Monatsgehalt", Interval: "jährlich", Amount: "5.200,00 €"},
	}, MonthlyTotal: "5.200,00 €", YearlyTotal: "67.600,00 €"}
	maskedComp = Compensation{Rows: []CompRow{
		{Name: "Grundgehalt", Interval: "monatlich", Masked: true},
		// A masked row that still carries an amount must not show it either.
		{Name: "Zulage", Interval: "monatlich", Amount: "250,00 €", Masked: true},
	}, Masked: true, MaskNote: "Bei einer Anmeldung per Link werden Beträge nicht angezeigt."}
)

// page is one rendered page with its parse tree.
type page struct {
	raw  string
	root *html.Node
}

func render(t *testing.T, name string, p Page) page {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, name, p); err != nil {
		t.Fatalf("Render(%s): %v", name, err)
	}
	root, err := html.Parse(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return page{raw: buf.String(), root: root}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func all(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func tag(a atom.Atom) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.DataAtom == a }
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// visibleText is the text a sighted reader sees: without visually hidden
// parts and without what is hidden from everyone.
func visibleText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode {
			if c, _ := attr(n, "class"); strings.Contains(" "+c+" ", " visually-hidden ") {
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func byID(root *html.Node, id string) *html.Node {
	found := all(root, func(n *html.Node) bool { v, _ := attr(n, "id"); return v == id })
	if len(found) == 0 {
		return nil
	}
	return found[0]
}

// checkCommon asserts what every page must satisfy: language, one h1, title,
// CSRF metas, labelled and uniquely identified controls, the navigation,
// and nothing the Content-Security-Policy would block.
func checkCommon(t *testing.T, name string, p Page, pg page) {
	t.Helper()
	root := pg.root
	htmlEl := all(root, tag(atom.Html))
	if lang, _ := attr(htmlEl[0], "lang"); lang != "de" {
		t.Errorf("html lang = %q, want de", lang)
	}
	if h1 := all(root, tag(atom.H1)); len(h1) != 1 {
		t.Errorf("%d h1 elements, want 1", len(h1))
	} else if got := strings.TrimSpace(text(h1[0])); got != p.Title {
		t.Errorf("h1 = %q, want %q", got, p.Title)
	}
	if titles := all(root, tag(atom.Title)); len(titles) != 1 || text(titles[0]) != p.Title+" – Mitarbeiterportal" {
		t.Errorf("title wrong: %v", titles)
	}
	if len(all(root, func(n *html.Node) bool {
		v, _ := attr(n, "charset")
		return n.DataAtom == atom.Meta && strings.EqualFold(v, "utf-8")
	})) != 1 {
		t.Error("no meta charset utf-8")
	}
	if len(all(root, func(n *html.Node) bool { v, _ := attr(n, "name"); return n.DataAtom == atom.Meta && v == "viewport" })) != 1 {
		t.Error("no viewport meta")
	}
	metas := map[string]string{}
	for _, m := range all(root, tag(atom.Meta)) {
		n, _ := attr(m, "name")
		metas[n], _ = attr(m, "content")
	}
	if metas["sb-csrf-cookie"] != p.CSRFCookie || metas["sb-csrf-header"] != p.CSRFHeader {
		t.Errorf("CSRF metas = %q/%q, want %q/%q", metas["sb-csrf-cookie"], metas["sb-csrf-header"], p.CSRFCookie, p.CSRFHeader)
	}

	// Unique ids.
	seen := map[string]bool{}
	for _, n := range all(root, func(n *html.Node) bool { _, ok := attr(n, "id"); return ok }) {
		id, _ := attr(n, "id")
		if seen[id] {
			t.Errorf("duplicate id %q", id)
		}
		seen[id] = true
	}

	// Every control has a label.
	labels := map[string]bool{}
	for _, l := range all(root, tag(atom.Label)) {
		if f, ok := attr(l, "for"); ok {
			labels[f] = true
		}
	}
	for _, c := range all(root, func(n *html.Node) bool {
		return n.DataAtom == atom.Input || n.DataAtom == atom.Select || n.DataAtom == atom.Textarea
	}) {
		if typ, _ := attr(c, "type"); typ == "hidden" || typ == "submit" {
			continue
		}
		id, _ := attr(c, "id")
		_, aria := attr(c, "aria-label")
		if !(id != "" && labels[id]) && !aria {
			t.Errorf("control %s name=%v without label", c.Data, c.Attr)
		}
	}
	// Every label points at an existing control.
	for f := range labels {
		if byID(root, f) == nil {
			t.Errorf("label for=%q points at nothing", f)
		}
	}

	// Nothing inline.
	for _, s := range all(root, tag(atom.Script)) {
		if src, _ := attr(s, "src"); src == "" || strings.TrimSpace(text(s)) != "" {
			t.Errorf("inline script: %v %q", s.Attr, text(s))
		}
	}
	if n := len(all(root, tag(atom.Style))); n > 0 {
		t.Errorf("%d <style> elements", n)
	}
	for _, n := range all(root, func(*html.Node) bool { return true }) {
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") || a.Key == "style" {
				t.Errorf("<%s> has attribute %s", n.Data, a.Key)
			}
			if (a.Key == "href" || a.Key == "src" || a.Key == "action") && strings.HasPrefix(strings.ToLower(a.Val), "javascript:") {
				t.Errorf("<%s> has a javascript: URL", n.Data)
			}
		}
	}

	// Skip link and main landmark.
	if m := byID(root, "inhalt"); m == nil || m.DataAtom != atom.Main {
		t.Error("no <main id=inhalt>")
	}
	skip := all(root, func(n *html.Node) bool { h, _ := attr(n, "href"); return n.DataAtom == atom.A && h == "#inhalt" })
	if len(skip) != 1 || strings.TrimSpace(text(skip[0])) != "Zum Inhalt springen" {
		t.Error("no skip link to #inhalt")
	}

	// Navigation.
	navs := all(root, func(n *html.Node) bool {
		l, _ := attr(n, "aria-label")
		return n.DataAtom == atom.Nav && l == "Hauptnavigation"
	})
	if p.User == nil {
		if len(navs) != 0 || len(all(root, tag(atom.Nav))) != 0 {
			t.Error("navigation shown without a user")
		}
	} else {
		if len(navs) != 1 {
			t.Fatalf("%d main navigations, want 1", len(navs))
		}
		var labels []string
		for _, a := range all(navs[0], tag(atom.A)) {
			labels = append(labels, strings.TrimSpace(text(a)))
		}
		if got, want := strings.Join(labels, ","), "Übersicht,Urlaub,Krankmeldung,Bescheinigungen,Vergütung,Abmelden"; got != want {
			t.Errorf("nav = %s, want %s", got, want)
		}
		current := all(root, func(n *html.Node) bool { v, _ := attr(n, "aria-current"); return v == "page" })
		want := map[string]string{"uebersicht": "/portal/", "urlaub": "/portal/urlaub", "krankmeldung": "/portal/krankmeldung",
			"bescheinigungen": "/portal/bescheinigungen", "verguetung": "/portal/verguetung", "abmelden": "/portal/abmelden"}[p.Nav]
		switch {
		case want == "" && len(current) != 0:
			t.Errorf("aria-current on a page without active nav key")
		case want != "" && len(current) != 1:
			t.Errorf("%d aria-current elements, want 1", len(current))
		case want != "":
			if h, _ := attr(current[0], "href"); h != want {
				t.Errorf("aria-current on %s, want %s", h, want)
			}
		}
		if !strings.Contains(text(root), p.User.Name) {
			t.Error("signed-in name not shown")
		}
	}

	// Banners.
	if p.Notice != "" && !hasRegion(root, "status", p.Notice) {
		t.Errorf("notice %q not in a role=status region", p.Notice)
	}
	if p.Error != "" && !hasRegion(root, "alert", p.Error) {
		t.Errorf("error %q not in a role=alert region", p.Error)
	}
	if p.Error != "" && strings.Count(pg.raw, html.EscapeString(p.Error)) != 1 {
		t.Errorf("error %q shown %d times", p.Error, strings.Count(pg.raw, html.EscapeString(p.Error)))
	}
}

func hasRegion(root *html.Node, role, want string) bool {
	for _, n := range all(root, func(n *html.Node) bool { r, _ := attr(n, "role"); return r == role }) {
		if strings.Contains(text(n), want) {
			return true
		}
	}
	return false
}

// formOf is the form whose data-api is api, with the names of its fields.
func formOf(t *testing.T, root *html.Node, api string) (*html.Node, []string) {
	t.Helper()
	forms := all(root, func(n *html.Node) bool { v, _ := attr(n, "data-api"); return n.DataAtom == atom.Form && v == api })
	if len(forms) != 1 {
		t.Fatalf("%d forms posting to %q, want 1", len(forms), api)
	}
	var names []string
	for _, c := range all(forms[0], func(n *html.Node) bool { _, ok := attr(n, "name"); return ok }) {
		v, _ := attr(c, "name")
		names = append(names, v)
	}
	for _, role := range []string{"status", "alert"} {
		if len(all(forms[0], func(n *html.Node) bool { r, _ := attr(n, "role"); return r == role })) != 1 {
			t.Errorf("form %s has no role=%s region", api, role)
		}
	}
	return forms[0], names
}

func submitText(form *html.Node) string {
	bs := all(form, func(n *html.Node) bool {
		typ, _ := attr(n, "type")
		return n.DataAtom == atom.Button && typ == "submit"
	})
	if len(bs) != 1 {
		return ""
	}
	return strings.TrimSpace(text(bs[0]))
}

func labelText(root *html.Node, id string) string {
	for _, l := range all(root, tag(atom.Label)) {
		if f, _ := attr(l, "for"); f == id {
			return strings.TrimSpace(text(l))
		}
	}
	return ""
}

// fieldLabels maps each named field of form to its label text.
func fieldLabels(root, form *html.Node) map[string]string {
	out := map[string]string{}
	for _, c := range all(form, func(n *html.Node) bool { _, ok := attr(n, "name"); return ok }) {
		name, _ := attr(c, "name")
		id, _ := attr(c, "id")
		out[name] = labelText(root, id)
	}
	return out
}

func headers(root *html.Node) string {
	var hs []string
	for _, th := range all(root, func(n *html.Node) bool {
		s, _ := attr(n, "scope")
		return n.DataAtom == atom.Th && s == "col"
	}) {
		hs = append(hs, strings.TrimSpace(text(th)))
	}
	return strings.Join(hs, ",")
}

func caption(root *html.Node) string {
	cs := all(root, tag(atom.Caption))
	if len(cs) != 1 {
		return ""
	}
	return strings.TrimSpace(text(cs[0]))
}

const noRecord = "Für Ihr Konto ist kein Personaldatensatz hinterlegt."

func TestPages(t *testing.T) {
	sso := sampleUser("sso")
	cases := []struct {
		name  string
		page  string
		p     Page
		check func(t *testing.T, pg page)
	}{
		{"sign-in with SSO and link", "anmelden", func() Page {
			p := basePage("Anmelden", "", nil)
			p.Data = SignIn{SSOURL: "/portal/anmelden/sso", MagicLinkAPI: "/api/auth/magic-link"}
			p.Notice = "Sie wurden abgemeldet."
			return p
		}(), func(t *testing.T, pg page) {
			sso := all(pg.root, func(n *html.Node) bool {
				h, _ := attr(n, "href")
				return n.DataAtom == atom.A && h == "/portal/anmelden/sso"
			})
			if len(sso) != 1 || strings.TrimSpace(text(sso[0])) != "Mit Firmenkonto anmelden" {
				t.Error("no SSO button")
			}
			form, names := formOf(t, pg.root, "/api/auth/magic-link")
			if strings.Join(names, ",") != "email" {
				t.Errorf("fields %v, want email", names)
			}
			email := all(form, tag(atom.Input))[0]
			for k, want := range map[string]string{"type": "email", "autocomplete": "email", "required": ""} {
				if v, ok := attr(email, k); !ok || v != want {
					t.Errorf("email input %s = %q (%v), want %q", k, v, ok, want)
				}
			}
			if l := fieldLabels(pg.root, form)["email"]; l != "E-Mail-Adresse" {
				t.Errorf("email label %q", l)
			}
			if s, _ := attr(form, "data-success"); s != "Wenn die Adresse bei uns hinterlegt ist, haben wir Ihnen einen Anmeldelink geschickt. Er ist 15 Minuten gültig." {
				t.Errorf("data-success = %q", s)
			}
			if submitText(form) != "Anmeldelink senden" {
				t.Errorf("submit %q", submitText(form))
			}
			if !strings.Contains(text(pg.root), "Anmeldelink an") || !strings.Contains(text(pg.root), "Firmenkonto an") {
				t.Error("no hint who uses which sign-in")
			}
		}},
		{"sign-in without SSO", "anmelden", func() Page {
			p := basePage("Anmelden", "", nil)
			p.Data = SignIn{MagicLinkAPI: "/api/auth/magic-link"}
			p.Error = "Die Anmeldung mit dem Firmenkonto ist fehlgeschlagen."
			return p
		}(), func(t *testing.T, pg page) {
			if strings.Contains(text(pg.root), "Mit Firmenkonto anmelden") {
				t.Error("SSO button shown although SSO is off")
			}
			formOf(t, pg.root, "/api/auth/magic-link")
		}},
		{"magic-link landing", "link", func() Page {
			p := basePage("Anmeldung", "", nil)
			p.Data = MagicLanding{RedeemAPI: "/api/auth/magic-link/redeem", Next: "/portal/"}
			return p
		}(), func(t *testing.T, pg page) {
			box := all(pg.root, func(n *html.Node) bool { v, _ := attr(n, "data-redeem-api"); return v == "/api/auth/magic-link/redeem" })
			if len(box) != 1 {
				t.Fatal("no redeem box")
			}
			if next, _ := attr(box[0], "data-next"); next != "/portal/" {
				t.Errorf("data-next %q", next)
			}
			if !hasRegion(box[0], "status", "Anmeldung wird geprüft …") {
				t.Error("no checking status")
			}
			if !hasRegion(box[0], "alert", "") {
				t.Error("no alert region for a failed redeem")
			}
			if ns := all(pg.root, tag(atom.Noscript)); len(ns) != 1 || !strings.Contains(pg.raw, "JavaScript benötigt") {
				t.Error("no noscript explanation")
			}
		}},
		{"overview", "uebersicht", func() Page {
			p := basePage("Übersicht", "uebersicht", sso)
			p.Data = sampleOverview
			p.Notice = "Ihre Angaben wurden gespeichert."
			return p
		}(), func(t *testing.T, pg page) {
			body := text(pg.root)
			if !strings.Contains(body, "Guten Tag, Erika Mustermann") {
				t.Error("no greeting")
			}
			dl := map[string]string{}
			for _, d := range all(pg.root, tag(atom.Dt)) {
				dd := d.Parent
				for _, c := range all(dd, tag(atom.Dd)) {
					dl[strings.TrimSpace(text(d))] = strings.TrimSpace(text(c))
				}
			}
			want := map[string]string{"Personalnummer": "P-1042", "Abteilung": "Netzbetrieb", "Position": "Ingenieurin",
				"Eintrittsdatum": "01.04.2019", "Bundesland": "NW", "Wochenstunden": "39,5", "E-Mail": "erika@example.de",
				"Urlaubsanspruch": "30 Tage", "Beantragt": "12 Tage", "Verbleibend": "18 Tage"}
			for k, v := range want {
				if dl[k] != v {
					t.Errorf("%s = %q, want %q", k, dl[k], v)
				}
			}
			if !strings.Contains(body, "Urlaub 2026") || !strings.Contains(body, "Offene Urlaubsanträge: 2") ||
				!strings.Contains(body, "Krankmeldungen: 1") || !strings.Contains(body, "Offene Bescheinigungen: 1") {
				t.Error("summary or counts missing")
			}
			for _, href := range []string{"/portal/urlaub", "/portal/krankmeldung", "/portal/bescheinigungen", "/portal/verguetung"} {
				main := byID(pg.root, "inhalt")
				if len(all(main, func(n *html.Node) bool { h, _ := attr(n, "href"); return h == href })) == 0 {
					t.Errorf("no link to %s in the content", href)
				}
			}
			if strings.Contains(body, noRecord) {
				t.Error("no-record text on an employee's overview")
			}
		}},
		{"overview of an applicant", "uebersicht", func() Page {
			u := sampleUser("magic_link")
			u.Name, u.HasEmployee = "Max Bewerber", false
			p := basePage("Übersicht", "uebersicht", u)
			p.Data = Overview{Year: 2026}
			return p
		}(), func(t *testing.T, pg page) {
			body := text(pg.root)
			if !strings.Contains(body, noRecord) || !strings.Contains(body, "Guten Tag, Max Bewerber") {
				t.Error("applicant overview lacks the greeting or the no-record text")
			}
			if len(all(pg.root, tag(atom.Dl))) != 0 {
				t.Error("profile shown without a record")
			}
			if !strings.Contains(body, "Gehaltsangaben werden nicht angezeigt") {
				t.Error("no magic-link hint")
			}
		}},
		{"leave", "urlaub", func() Page {
			p := basePage("Urlaub", "urlaub", sso)
			p.Data = sampleLeave
			return p
		}(), func(t *testing.T, pg page) {
			if caption(pg.root) != "Ihre Urlaubsanträge" || headers(pg.root) != "Art,Von,Bis,Arbeitstage,Status,Bemerkung" {
				t.Errorf("table %q %q", caption(pg.root), headers(pg.root))
			}
			if rows := all(pg.root, tag(atom.Tbody)); len(rows) != 1 || len(all(rows[0], tag(atom.Tr))) != 2 {
				t.Error("want 2 leave rows")
			}
			if !strings.Contains(text(pg.root), "14.08.2026") {
				t.Error("row content missing")
			}
			form, names := formOf(t, pg.root, "/api/v1/portal/leave-requests")
			if got := strings.Join(names, ","); got != "type,start_date,end_date,comment" {
				t.Errorf("fields %s", got)
			}
			labels := fieldLabels(pg.root, form)
			want := map[string]string{"type": "Art", "start_date": "Erster Urlaubstag", "end_date": "Letzter Urlaubstag", "comment": "Bemerkung (optional)"}
			for k, v := range want {
				if labels[k] != v {
					t.Errorf("label of %s = %q, want %q", k, labels[k], v)
				}
			}
			if n := len(all(form, tag(atom.Option))); n != 2 {
				t.Errorf("%d leave types, want 2", n)
			}
			for _, id := range []string{"urlaub-von", "urlaub-bis"} {
				if typ, _ := attr(byID(pg.root, id), "type"); typ != "date" {
					t.Errorf("%s type %q", id, typ)
				}
			}
			if submitText(form) != "Urlaub beantragen" {
				t.Errorf("submit %q", submitText(form))
			}
			if !hasHeading(pg.root, "Urlaub beantragen") {
				t.Error("no form heading")
			}
		}},
		{"leave without requests", "urlaub", func() Page {
			p := basePage("Urlaub", "urlaub", sso)
			d := sampleLeave
			d.Requests = nil
			p.Data = d
			return p
		}(), func(t *testing.T, pg page) {
			if len(all(pg.root, tag(atom.Table))) != 0 || !strings.Contains(text(pg.root), "noch keinen Urlaub beantragt") {
				t.Error("no empty state")
			}
			formOf(t, pg.root, "/api/v1/portal/leave-requests")
		}},
		{"sick leave", "krankmeldung", func() Page {
			p := basePage("Krankmeldung", "krankmeldung", sso)
			p.Data = sampleSick
			return p
		}(), func(t *testing.T, pg page) {
			if caption(pg.root) != "Ihre Krankmeldungen" || headers(pg.root) != "Von,Voraussichtlich bis,AU-Bescheinigung,Gemeldet am,Bemerkung" {
				t.Errorf("table %q %q", caption(pg.root), headers(pg.root))
			}
			var au []string
			for _, tr := range all(all(pg.root, tag(atom.Tbody))[0], tag(atom.Tr)) {
				au = append(au, strings.TrimSpace(text(all(tr, tag(atom.Td))[2])))
			}
			if strings.Join(au, ",") != "ja,nein" {
				t.Errorf("AU column %v", au)
			}
			form, names := formOf(t, pg.root, "/api/v1/portal/sick-leave-reports")
			if got := strings.Join(names, ","); got != "start_date,end_date,certificate,comment" {
				t.Errorf("fields %s", got)
			}
			labels := fieldLabels(pg.root, form)
			want := map[string]string{"start_date": "Erster Krankheitstag", "end_date": "Voraussichtlich letzter Krankheitstag",
				"certificate": "Arbeitsunfähigkeitsbescheinigung liegt vor", "comment": "Bemerkung (optional)"}
			for k, v := range want {
				if labels[k] != v {
					t.Errorf("label of %s = %q, want %q", k, labels[k], v)
				}
			}
			if typ, _ := attr(byID(pg.root, "krank-au"), "type"); typ != "checkbox" {
				t.Error("certificate is not a checkbox")
			}
			if submitText(form) != "Krankmeldung senden" {
				t.Errorf("submit %q", submitText(form))
			}
		}},
		{"certificates", "bescheinigungen", func() Page {
			p := basePage("Bescheinigungen", "bescheinigungen", sso)
			p.Data = sampleCerts
			return p
		}(), func(t *testing.T, pg page) {
			if caption(pg.root) != "Ihre Anforderungen" || headers(pg.root) != "Art,Zweck,Sprache,Status,Angefordert am" {
				t.Errorf("table %q %q", caption(pg.root), headers(pg.root))
			}
			form, names := formOf(t, pg.root, "/api/v1/portal/certificates")
			if got := strings.Join(names, ","); got != "type,purpose,language" {
				t.Errorf("fields %s", got)
			}
			labels := fieldLabels(pg.root, form)
			want := map[string]string{"type": "Art", "purpose": "Zweck (optional)", "language": "Sprache"}
			for k, v := range want {
				if labels[k] != v {
					t.Errorf("label of %s = %q, want %q", k, labels[k], v)
				}
			}
			if typ, _ := attr(byID(pg.root, "besch-zweck"), "type"); typ != "text" {
				t.Error("purpose is not a text input")
			}
			if langs := all(byID(pg.root, "besch-sprache"), tag(atom.Option)); len(langs) != 2 {
				t.Error("want 2 languages")
			}
			if submitText(form) != "Bescheinigung anfordern" {
				t.Errorf("submit %q", submitText(form))
			}
		}},
		{"compensation", "verguetung", func() Page {
			p := basePage("Vergütung", "verguetung", sso)
			p.Data = sampleComp
			return p
		}(), func(t *testing.T, pg page) {
			if caption(pg.root) != "Ihre Vergütung" || headers(pg.root) != "Bestandteil,Turnus,Betrag" {
				t.Errorf("table %q %q", caption(pg.root), headers(pg.root))
			}
			if got := strings.Join(amounts(pg.root), "|"); got != "5.200,00 €|5.200,00 €|5.200,00 €|67.600,00 €" {
				t.Errorf("amounts %s", got)
			}
			body := text(pg.root)
			if !strings.Contains(body, "Monatlich gesamt") || !strings.Contains(body, "Jährlich gesamt") {
				t.Error("no totals")
			}
			if strings.Contains(body, "verborgen") {
				t.Error("unmasked page mentions hidden amounts")
			}
		}},
		{"masked compensation", "verguetung", func() Page {
			p := basePage("Vergütung", "verguetung", sampleUser("magic_link"))
			p.Data = maskedComp
			return p
		}(), func(t *testing.T, pg page) {
			cells := all(pg.root, func(n *html.Node) bool { c, _ := attr(n, "class"); return strings.Contains(c, "amount") })
			if len(cells) != 4 {
				t.Fatalf("%d amount cells, want 4", len(cells))
			}
			for _, c := range cells {
				if strings.ContainsAny(text(c), "0123456789") {
					t.Errorf("masked amount cell has digits: %q", text(c))
				}
				if !strings.Contains(text(c), "Betrag verborgen") {
					t.Errorf("masked cell without screen-reader text: %q", text(c))
				}
				if got := strings.TrimSpace(visibleText(c)); got != "••••• (verborgen)" {
					t.Errorf("visible masked text %q", got)
				}
				hidden := all(c, func(n *html.Node) bool { v, _ := attr(n, "aria-hidden"); return v == "true" })
				if len(hidden) != 1 || !strings.Contains(text(hidden[0]), "•••••") {
					t.Error("dots are not hidden from screen readers")
				}
			}
			if strings.Contains(pg.raw, "250,00") {
				t.Error("masked row leaked its amount")
			}
			notes := all(pg.root, func(n *html.Node) bool { return n.DataAtom == atom.P && strings.Contains(text(n), maskedComp.MaskNote) })
			if len(notes) != 1 {
				t.Error("mask note not shown as a paragraph")
			}
		}},
		{"sign-out", "abmelden", func() Page {
			p := basePage("Abmelden", "abmelden", sso)
			p.Data = SignOut{LogoutAPI: "/api/auth/logout", Next: "/portal/anmelden?abgemeldet=1"}
			return p
		}(), func(t *testing.T, pg page) {
			form, names := formOf(t, pg.root, "/api/auth/logout")
			if len(names) != 0 {
				t.Errorf("sign-out form sends fields %v", names)
			}
			if next, _ := attr(form, "data-next"); next != "/portal/anmelden?abgemeldet=1" {
				t.Errorf("data-next %q", next)
			}
			if nav, _ := attr(form, "data-navigate"); nav != "replace" {
				t.Error("sign-out does not replace the history entry")
			}
			if submitText(form) != "Jetzt abmelden" {
				t.Errorf("submit %q", submitText(form))
			}
		}},
		{"error page", "fehler", func() Page {
			p := basePage("Fehler", "", sso)
			p.Error = "Die Seite konnte nicht geladen werden."
			return p
		}(), func(t *testing.T, pg page) {
			main := byID(pg.root, "inhalt")
			if len(all(main, func(n *html.Node) bool { h, _ := attr(n, "href"); return h == "/portal/" })) != 1 {
				t.Error("no link to the overview")
			}
		}},
		{"error page signed out", "fehler", func() Page {
			p := basePage("Fehler", "", nil)
			p.Error = "Interner Fehler."
			return p
		}(), nil},
	}
	for _, emp := range []struct{ name, title string }{
		{"urlaub", "Urlaub"}, {"krankmeldung", "Krankmeldung"}, {"bescheinigungen", "Bescheinigungen"}, {"verguetung", "Vergütung"}, {"uebersicht", "Übersicht"},
	} {
		cases = append(cases, struct {
			name  string
			page  string
			p     Page
			check func(t *testing.T, pg page)
		}{emp.name + " without record", emp.name, basePage(emp.title, emp.name, sampleUser("magic_link")), func(t *testing.T, pg page) {
			main := byID(pg.root, "inhalt")
			if !strings.Contains(text(main), noRecord) {
				t.Error("no no-record text")
			}
			if n := len(all(main, tag(atom.Table))) + len(all(main, tag(atom.Form))) + len(all(main, tag(atom.Dl))); n != 0 {
				t.Errorf("%d tables, forms or lists without a record", n)
			}
		}})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pg := render(t, tc.page, tc.p)
			checkCommon(t, tc.page, tc.p, pg)
			if tc.check != nil {
				tc.check(t, pg)
			}
		})
	}
}

func hasHeading(root *html.Node, want string) bool {
	for _, h := range all(root, tag(atom.H2)) {
		if strings.TrimSpace(text(h)) == want {
			return true
		}
	}
	return false
}

func amounts(root *html.Node) []string {
	var out []string
	for _, c := range all(root, func(n *html.Node) bool { c, _ := attr(n, "class"); return strings.Contains(c, "amount") }) {
		out = append(out, strings.TrimSpace(text(c)))
	}
	return out
}

func TestMagicLinkHintOnlyForLinkSessions(t *testing.T) {
	for _, method := range []string{"sso", "magic_link"} {
		p := basePage("Übersicht", "uebersicht", sampleUser(method))
		p.Data = sampleOverview
		pg := render(t, "uebersicht", p)
		got := strings.Contains(text(pg.root), "Gehaltsangaben werden nicht angezeigt")
		if got != (method == "magic_link") {
			t.Errorf("%s: hint shown = %v", method, got)
		}
	}
}

func TestEscapesUserText(t *testing.T) {
	evil := `<script>x</script>`
	attrEvil := `"><img src=x onerror=alert(1)>`
	u := sampleUser("sso")
	u.Name = evil
	cases := []struct {
		page string
		data any
	}{
		{"uebersicht", Overview{Employee: &Employee{ID: evil, Name: evil, Email: evil, Department: evil, Position: evil, EntryDate: evil, State: evil, WeeklyHours: evil}}},
		{"urlaub", Leave{API: attrEvil, Types: []Option{{attrEvil, evil}}, Requests: []LeaveRow{{Type: evil, Start: evil, End: evil, Status: evil, Comment: evil}}}},
		{"krankmeldung", Sick{API: attrEvil, Reports: []SickRow{{Start: evil, End: evil, Comment: evil, Reported: evil}}}},
		{"bescheinigungen", Certificates{API: attrEvil, Types: []Option{{attrEvil, evil}}, Languages: []Option{{attrEvil, evil}}, Items: []CertRow{{Type: evil, Purpose: evil, Language: evil, Status: evil, Requested: evil}}}},
		{"verguetung", Compensation{Rows: []CompRow{{Name: evil, Interval: evil, Amount: evil}}, MonthlyTotal: evil, YearlyTotal: evil}},
		{"anmelden", SignIn{SSOURL: attrEvil, MagicLinkAPI: attrEvil}},
		{"link", MagicLanding{RedeemAPI: attrEvil, Next: attrEvil}},
		{"abmelden", SignOut{LogoutAPI: attrEvil, Next: attrEvil}},
	}
	for _, tc := range cases {
		t.Run(tc.page, func(t *testing.T) {
			p := basePage(evil, tc.page, u)
			p.Notice, p.Error, p.Data = evil, evil, tc.data
			p.CSRFCookie, p.CSRFHeader = attrEvil, attrEvil
			pg := render(t, tc.page, p)
			if n := len(all(pg.root, tag(atom.Script))); n != 1 {
				t.Errorf("%d script elements, want only the page script", n)
			}
			if n := len(all(pg.root, tag(atom.Img))); n != 0 {
				t.Error("attribute value broke out into an element")
			}
			for _, n := range all(pg.root, func(*html.Node) bool { return true }) {
				for _, a := range n.Attr {
					if strings.HasPrefix(a.Key, "on") {
						t.Errorf("injected attribute %s", a.Key)
					}
				}
			}
			if !strings.Contains(text(pg.root), evil) {
				t.Error("user text not shown literally")
			}
			if !strings.Contains(pg.raw, "&lt;script&gt;x&lt;/script&gt;") {
				t.Error("user text not escaped")
			}
		})
	}
}

func TestRenderRefusals(t *testing.T) {
	cases := []struct {
		name, page string
		data       any
	}{
		{"unknown page", "unbekannt", nil},
		{"template partial as page", "layout", nil},
		{"wrong data type", "urlaub", Sick{}},
		{"pointer instead of value", "urlaub", &Leave{}},
		{"data on the error page", "fehler", Leave{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := basePage("X", "", nil)
			p.Data = tc.data
			if err := Render(&buf, tc.page, p); err == nil {
				t.Fatal("no error")
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error", buf.Len())
			}
		})
	}
}

func serve(t *testing.T, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	h := http.StripPrefix("/portal/static/", Static())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

func TestStatic(t *testing.T) {
	js, err := os.ReadFile("static/portal.js")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, target string
		status         int
		contentType    string
		body           []byte
	}{
		{"GET", "/portal/static/portal.js", 200, "text/javascript; charset=utf-8", js},
		{"GET", "/portal/static/portal.css", 200, "text/css; charset=utf-8", nil},
		{"HEAD", "/portal/static/portal.js", 200, "text/javascript; charset=utf-8", nil},
		{"GET", "/portal/static/fehlt.js", 404, "", nil},
		{"GET", "/portal/static/", 404, "", nil},
		{"GET", "/portal/static/../web.go", 404, "", nil},
		{"GET", "/portal/static/static/portal.js", 404, "", nil},
		{"POST", "/portal/static/portal.js", 405, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			rec := serve(t, tc.method, tc.target)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if tc.status != 200 {
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != tc.contentType {
				t.Errorf("Content-Type %q, want %q", ct, tc.contentType)
			}
			if rec.Header().Get("Cache-Control") == "" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v", rec.Header())
			}
			if tc.body != nil && !bytes.Equal(rec.Body.Bytes(), tc.body) {
				t.Error("body differs from the file")
			}
		})
	}
}

// TestStaticVersionedLinks follows the asset links of a rendered page: they
// must be served, with a long cache only for the current version, and a
// revalidation by ETag must answer 304.
func TestStaticVersionedLinks(t *testing.T) {
	p := basePage("Anmelden", "", nil)
	p.Data = SignIn{MagicLinkAPI: "/api/auth/magic-link"}
	pg := render(t, "anmelden", p)
	var links []string
	for _, n := range all(pg.root, func(n *html.Node) bool { return n.DataAtom == atom.Link || n.DataAtom == atom.Script }) {
		// The empty data: icon keeps browsers from asking for /favicon.ico.
		if v, ok := attr(n, "href"); ok && v != "data:," {
			links = append(links, v)
		}
		if v, ok := attr(n, "src"); ok {
			links = append(links, v)
		}
	}
	if len(links) != 2 {
		t.Fatalf("asset links %v", links)
	}
	for _, l := range links {
		rec := serve(t, "GET", l)
		if rec.Code != 200 || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
			t.Errorf("%s: %d %q", l, rec.Code, rec.Header().Get("Cache-Control"))
		}
		stale := serve(t, "GET", strings.Split(l, "?")[0]+"?v=alt")
		if stale.Code != 200 || strings.Contains(stale.Header().Get("Cache-Control"), "immutable") {
			t.Errorf("%s with a stale version: %d %q", l, stale.Code, stale.Header().Get("Cache-Control"))
		}
		req := httptest.NewRequest("GET", l, nil)
		req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
		rec2 := httptest.NewRecorder()
		http.StripPrefix("/portal/static/", Static()).ServeHTTP(rec2, req)
		if rec2.Code != http.StatusNotModified {
			t.Errorf("%s revalidation: %d", l, rec2.Code)
		}
	}
}

// TestScriptSyntax checks the script with Node where it is installed; the
// portal itself never needs Node.
func TestScriptSyntax(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	out, err := exec.Command(node, "--check", filepath.Join("static", "portal.js")).CombinedOutput()
	if err != nil {
		t.Fatalf("node --check: %v\n%s", err, out)
	}
}

// scriptHarness runs static/portal.js in Node against a small fake DOM and
// a recorded fetch, and checks what the script sends and shows. It prints
// "N passed, N failed" and exits non-zero on a failure.
const scriptHarness = `
"use strict";
const vm = require("vm");
const fs = require("fs");
const src = fs.readFileSync(process.argv[2], "utf8");
let passed = 0, failed = 0;
function check(name, cond, got) {
  if (cond) { passed++; } else { failed++; console.log("FAIL " + name + (got === undefined ? "" : ": " + JSON.stringify(got))); }
}

class El {
  constructor(tag, attrs) {
    this.tagName = tag; this.attrs = Object.assign({}, attrs || {}); this.children = []; this.listeners = {};
    this.text = ""; this.disabled = false; this.checked = false;
    this.type = this.attrs.type || (tag === "select" ? "select-one" : tag === "textarea" ? "textarea" : "");
    this.name = this.attrs.name || ""; this.value = this.attrs.value || ""; this.required = "required" in this.attrs;
  }
  get textContent() { return this.text + this.children.map(c => c.textContent).join(" "); }
  set textContent(v) { this.text = String(v); this.children = []; }
  getAttribute(k) { return k in this.attrs ? this.attrs[k] : null; }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  removeAttribute(k) { delete this.attrs[k]; }
  addEventListener(t, f) { (this.listeners[t] = this.listeners[t] || []).push(f); }
  focus() { this.doc.focused = this; }
  appendChild(c) { this.children.push(c); return c; }
  set href(v) { this.attrs.href = v; }
  get href() { return this.attrs.href; }
}

function matches(el, sel) {
  return sel.split(",").some(s => {
    const m = /^(\w+)?(?:\[([\w-]+)(?:="([^"]*)")?\])?(:not\(\[type\]\))?$/.exec(s.trim());
    if (!m) { throw new Error("selector not supported: " + s); }
    if (m[1] && el.tagName !== m[1]) { return false; }
    if (m[2] && !(m[2] in el.attrs)) { return false; }
    if (m[2] && m[3] !== undefined && el.attrs[m[2]] !== m[3]) { return false; }
    if (m[4] && "type" in el.attrs) { return false; }
    return true;
  });
}

function scope(list) {
  return {
    querySelector: sel => list().find(e => matches(e, sel)) || null,
    querySelectorAll: sel => list().filter(e => matches(e, sel)),
  };
}

// page builds a document from [tag, attrs, children] specs.
function page(specs, opts) {
  const all = [];
  const doc = { focused: null, cookie: opts.cookie || "", readyState: "complete" };
  function build(spec, parentList) {
    const el = new El(spec[0], spec[1]);
    el.doc = doc;
    all.push(el);
    parentList.push(el);
    const inner = [];
    (spec[2] || []).forEach(c => build(c, inner));
    el.descendants = () => { const out = []; const walk = l => l.forEach(e => { out.push(e); walk(e.kids); }); walk(el.kids); return out; };
    el.kids = inner;
    if (el.tagName === "form") {
      Object.assign(el, scope(el.descendants));
      Object.defineProperty(el, "elements", { get() {
        const els = el.descendants().filter(e => ["input", "select", "textarea", "button"].includes(e.tagName));
        els.namedItem = n => els.find(e => e.name === n) || null;
        return els;
      } });
      el.reset = () => { el.descendants().forEach(e => { if (e.tagName !== "button") { e.value = ""; e.checked = false; } }); el.wasReset = true; };
    } else {
      Object.assign(el, scope(el.descendants));
    }
    return el;
  }
  const top = [];
  specs.forEach(s => build(s, top));
  Object.assign(doc, scope(() => all));
  doc.createElement = tag => { const e = new El(tag); e.doc = doc; e.kids = []; return e; };
  doc.addEventListener = () => {};
  doc.byId = id => all.find(e => e.attrs.id === id);
  return doc;
}

const metas = [["meta", { name: "sb-csrf-cookie", content: "__Host-sb_csrf" }], ["meta", { name: "sb-csrf-header", content: "X-CSRF-Token" }]];

function run(doc, opts) {
  const calls = [], nav = [];
  const responses = (opts.responses || []).slice();
  const loc = { pathname: opts.pathname || "/portal/urlaub", hash: opts.hash || "",
    assign: u => nav.push(["assign", u]), replace: u => nav.push(["replace", u]) };
  const hist = { replaced: [], replaceState: function () { this.replaced.push(Array.from(arguments)); loc.hash = ""; } };
  const fetch = (url, init) => {
    const button = doc.querySelector('button[type="submit"]');
    calls.push({ url, init, disabled: button ? button.disabled : null });
    const r = responses.shift() || { status: 200, body: {} };
    return Promise.resolve({ ok: r.status >= 200 && r.status < 300, status: r.status,
      json: () => r.body === undefined ? Promise.reject(new Error("not json")) : Promise.resolve(r.body) });
  };
  vm.runInNewContext(src, { document: doc, location: loc, history: hist, fetch, URLSearchParams, console });
  return { calls, nav, hist };
}

async function submit(doc, id) {
  const form = doc.byId(id);
  let prevented = false;
  form.listeners.submit.forEach(f => f({ preventDefault() { prevented = true; } }));
  for (let i = 0; i < 5; i++) { await new Promise(r => setTimeout(r, 0)); }
  return prevented;
}

function leaveForm(extra) {
  return page(metas.concat([["form", Object.assign({ id: "f", "data-api": "/api/v1/portal/leave-requests" }, extra || {}), [
    ["select", { id: "art", name: "type", required: "", value: "erholungsurlaub" }],
    ["input", { id: "von", type: "date", name: "start_date", required: "", value: "2026-08-03" }],
    ["input", { id: "bis", type: "date", name: "end_date", required: "", value: "14.8.2026" }],
    ["textarea", { id: "bem", name: "comment", value: "  " }],
    ["input", { id: "au", type: "checkbox", name: "certificate", value: "true" }],
    ["div", { role: "status" }], ["div", { role: "alert", tabindex: "-1" }],
    ["button", { type: "submit" }],
  ]]]), { cookie: "other=1; __Host-sb_csrf=tok%2B1; x=2" });
}

(async () => {
  {
    const doc = leaveForm();
    const r = run(doc, { responses: [{ status: 201, body: {} }] });
    check("prevents the native submit", await submit(doc, "f"));
    const c = r.calls[0] || { init: { headers: {} } };
    check("url", c.url === "/api/v1/portal/leave-requests", c.url);
    check("method", c.init.method === "POST", c.init.method);
    check("credentials", c.init.credentials === "same-origin", c.init.credentials);
    check("csrf header", c.init.headers["X-CSRF-Token"] === "tok+1", c.init.headers);
    check("content type", c.init.headers["Content-Type"] === "application/json" && c.init.headers["Accept"] === "application/json", c.init.headers);
    check("body", c.init.body === JSON.stringify({ type: "erholungsurlaub", start_date: "2026-08-03", end_date: "2026-08-14", certificate: false }), c.init.body);
    check("button disabled while sending", c.disabled === true);
    check("navigates to the saved page", JSON.stringify(r.nav) === JSON.stringify([["assign", "/portal/urlaub?gespeichert=1"]]), r.nav);
  }
  {
    const doc = leaveForm({ "data-method": "PUT", "data-next": "/portal/weiter" });
    doc.byId("au").checked = true;
    doc.byId("bem").value = "Sommer";
    const r = run(doc, {});
    await submit(doc, "f");
    const c = r.calls[0];
    check("data-method", c.init.method === "PUT", c.init.method);
    check("checked checkbox and comment", JSON.parse(c.init.body).certificate === true && JSON.parse(c.init.body).comment === "Sommer", c.init.body);
    check("data-next", JSON.stringify(r.nav) === JSON.stringify([["assign", "/portal/weiter"]]), r.nav);
  }
  {
    const doc = leaveForm();
    const r = run(doc, { responses: [{ status: 400, body: { error: "invalid", message: "end_date: before start_date", field: "end_date" } }] });
    await submit(doc, "f");
    const alert = doc.querySelector('[role="alert"]');
    check("400 message", alert.textContent.startsWith("Bitte prüfen Sie Ihre Eingaben.") && alert.textContent.includes("end_date: before start_date"), alert.textContent);
    check("400 marks the field", doc.byId("bis").getAttribute("aria-invalid") === "true");
    check("400 focuses the field", doc.focused === doc.byId("bis"));
    check("button enabled again", doc.querySelector('button[type="submit"]').disabled === false);
    check("no navigation on error", r.nav.length === 0, r.nav);
    r.calls.length = 0;
  }
  const statuses = [
    [403, "Diese Aktion ist nicht erlaubt. Bitte laden Sie die Seite neu."],
    [404, "Für Ihr Konto ist kein Personaldatensatz hinterlegt."],
    [409, "Der Zeitraum überschneidet sich mit einem bestehenden Eintrag."],
    [500, "Ein unerwarteter Fehler ist aufgetreten. Bitte versuchen Sie es später erneut."],
  ];
  for (const [status, want] of statuses) {
    const doc = leaveForm();
    doc.byId("bis").setAttribute("aria-invalid", "true");
    run(doc, { responses: [{ status, body: status === 500 ? undefined : { error: "x", message: "overlaps request 7" } }] });
    await submit(doc, "f");
    const alert = doc.querySelector('[role="alert"]');
    check(status + " message", alert.textContent.startsWith(want), alert.textContent);
    check(status + " focuses the alert", doc.focused === alert);
    check(status + " clears old marks", doc.byId("bis").getAttribute("aria-invalid") === null);
    if (status === 409) { check("409 message detail", alert.textContent.includes("overlaps request 7"), alert.textContent); }
  }
  {
    const doc = leaveForm();
    const r = run(doc, { responses: [{ status: 401, body: { error: "unauthenticated" } }] });
    await submit(doc, "f");
    check("401 goes to sign-in", JSON.stringify(r.nav) === JSON.stringify([["assign", "/portal/anmelden"]]), r.nav);
  }
  {
    const doc = page(metas.concat([["form", { id: "m", "data-api": "/api/auth/magic-link", "data-success": "Gesendet." }, [
      ["input", { id: "mail", type: "email", name: "email", required: "", value: "a@example.de" }],
      ["div", { role: "status" }], ["div", { role: "alert" }], ["button", { type: "submit" }],
    ]]]), { cookie: "__Host-sb_csrf=abc" });
    const r = run(doc, { pathname: "/portal/anmelden" });
    await submit(doc, "m");
    check("magic link body", r.calls[0].init.body === JSON.stringify({ email: "a@example.de" }), r.calls[0].init.body);
    check("data-success shown", doc.querySelector('[role="status"]').textContent === "Gesendet.");
    check("data-success does not navigate", r.nav.length === 0, r.nav);
  }
  {
    const doc = page(metas.concat([["form", { id: "o", "data-api": "/api/auth/logout", "data-next": "/portal/anmelden?abgemeldet=1", "data-navigate": "replace" }, [
      ["div", { role: "status" }], ["div", { role: "alert" }], ["button", { type: "submit" }],
    ]]]), { cookie: "__Host-sb_csrf=abc" });
    const r = run(doc, { pathname: "/portal/abmelden" });
    await submit(doc, "o");
    check("logout csrf", r.calls[0].init.headers["X-CSRF-Token"] === "abc", r.calls[0].init.headers);
    check("logout replaces", JSON.stringify(r.nav) === JSON.stringify([["replace", "/portal/anmelden?abgemeldet=1"]]), r.nav);
  }
  for (const [name, hash, status, ok] of [["redeem ok", "#code=AbC-123", 200, true], ["redeem refused", "#code=AbC-123", 400, false], ["no code", "", 200, false]]) {
    const doc = page(metas.concat([["div", { "data-redeem-api": "/api/auth/magic-link/redeem", "data-next": "/portal/" }, [
      ["p", { role: "status" }], ["div", { role: "alert", tabindex: "-1" }],
    ]]]), { cookie: "__Host-sb_csrf=tok" });
    doc.querySelector('[role="status"]').textContent = "Anmeldung wird geprüft …";
    const r = run(doc, { pathname: "/portal/anmelden/link", hash, responses: [{ status, body: {} }] });
    for (let i = 0; i < 5; i++) { await new Promise(res => setTimeout(res, 0)); }
    check(name + ": hash removed", JSON.stringify(r.hist.replaced) === JSON.stringify([[null, "", "/portal/anmelden/link"]]), r.hist.replaced);
    if (hash) {
      const c = r.calls[0];
      check(name + ": body", c && c.init.body === JSON.stringify({ code: "AbC-123" }), c && c.init.body);
      check(name + ": csrf", c && c.init.headers["X-CSRF-Token"] === "tok");
    } else {
      check(name + ": nothing sent", r.calls.length === 0);
    }
    const alert = doc.querySelector('[role="alert"]');
    if (ok) {
      check(name + ": goes on", JSON.stringify(r.nav) === JSON.stringify([["replace", "/portal/"]]), r.nav);
    } else {
      check(name + ": message", alert.textContent.includes("Der Anmeldelink ist ungültig, abgelaufen oder wurde bereits verwendet."), alert.textContent);
      const link = alert.children.flatMap(c => c.children).find(c => c.tagName === "a");
      check(name + ": retry link", link && link.href === "/portal/anmelden" && link.textContent === "Neuen Anmeldelink anfordern");
      check(name + ": no navigation", r.nav.length === 0, r.nav);
    }
  }
  console.log(passed + " passed, " + failed + " failed");
  process.exit(failed ? 1 : 0);
})();
`

// TestScriptBehaviour runs the harness above where Node is installed: the
// pages' forms depend on the script for every state change.
func TestScriptBehaviour(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	harness := filepath.Join(t.TempDir(), "harness.js")
	if err := os.WriteFile(harness, []byte(scriptHarness), 0o600); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join("static", "portal.js"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, harness, abs).CombinedOutput()
	if err != nil {
		t.Fatalf("script harness: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), " passed, 0 failed") {
		t.Fatalf("unexpected harness output:\n%s", out)
	}
}
