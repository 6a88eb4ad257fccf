package consoleweb

import (
	"bytes"
	"html/template"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// samples are a page's data as the handlers fill it, with text that must
// be escaped.
var samples = map[string]any{
	"anmelden": SignIn{SSOURL: "/portal/anmelden/sso?weiter=/console/"},
	"verboten": Forbidden{Email: "nora@firma.test"},
	"fehler":   nil,
	"lage": Situation{Day: "So, 29.03.2026", DayISO: "2026-03-29", QuarterHours: 92, Countdown: "noch 1 h",
		Chain: Badge{"fehlgeschlagen", "bad"}, Start: Action{Method: "POST", URL: "/v1/console/runs", Body: `{"stage":"chain"}`, Key: "k1", Label: "Kette starten"},
		Stages: []StageRow{{Stage: "aggregate", Label: "Aggregation", State: Badge{"fehlgeschlagen", "bad"}, Error: `<script>alert(1)</script>`,
			Retry: &Action{Method: "POST", URL: "/v1/console/runs/7/retry", Body: "{}", Key: "k2", Label: "Wiederholen"}}},
		Areas: []AreaChart{{Area: "TenneT", ID: "zone-tennet", Chart: template.HTML(`<svg class="chart" role="img"></svg>`),
			Rows: []QHRow{{Time: "00:00", Forecast: "1,000", Position: "0,000", Open: "1,000"}}}},
		TSO: []TSORow{{Portfolio: "p1", Area: "TenneT", TSO: "10XDE", Version: 2, State: Badge{"Anomalie (ANO)", "warn"}, Reasons: []string{"A63"}}}},
	"laeufe": Runs{Rows: []RunRow{{ID: 7, URL: "/console/laeufe/7", Stage: "Aggregation", Status: Badge{"fehlgeschlagen", "bad"}}},
		StartStages: []Option{{Value: "chain", Label: "Kette", Selected: true}}, StartKey: "k3"},
	"lauf":         Run{RunRow: RunRow{ID: 7, Stage: "Kette"}, Log: []LogLine{{Time: "t", Level: "ERROR", Message: "m", Attrs: `{"a":1}`}}},
	"eingang":      Inbox{State: "rejected", Rows: []InboxRow{{Name: "m.csv", Problems: []FileProblem{{Line: "2", Column: "malo", Message: "x"}}}}},
	"fahrplaene":   Schedules{Threads: []Thread{{Portfolio: "p1", Versions: []ScheduleVersion{{Version: 1, Answers: []Answer{{Kind: "ANO"}}}}}}},
	"marktpartner": Partners{Groups: []PartnerGroup{{Area: "TenneT", Rows: []PartnerRow{{Name: "Netz", Status: Badge{"rot", "bad"}}}}}},
	"antworten":    Replies{Days: 7, Rows: []ReplyRow{{Subject: "Re: PARTIN", Verdict: Badge{"offen", "warn"}}}},
	"kalkulation":  Calculation{Von: "2026-03-27", Bis: "2026-03-29", Rows: []CalcRow{{Day: "29.03.2026", MissingSpot: 24}}},
}

// TestPagesSuitTheCSP: every page renders as HTML without inline script,
// event handler or style, which the console's Content-Security-Policy
// would block, and escapes the text it is given.
func TestPagesSuitTheCSP(t *testing.T) {
	for name := range dataTypes {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			p := Page{Title: "T", Nav: name, User: &User{Name: "Olga", Email: "olga@firma.test"}, CSRFCookie: "sb_csrf",
				CSRFHeader: "X-CSRF-Token", Live: true, LiveAfter: 41, Error: "e", Data: samples[name]}
			if err := Render(&buf, name, p); err != nil {
				t.Fatal(err)
			}
			doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			var walk func(*html.Node)
			walk = func(n *html.Node) {
				if n.Type == html.ElementNode {
					if n.Data == "style" {
						t.Errorf("a <style> element")
					}
					src := false
					for _, a := range n.Attr {
						if a.Key == "style" || strings.HasPrefix(a.Key, "on") {
							t.Errorf("<%s %s=%q>: inline style or handler", n.Data, a.Key, a.Val)
						}
						src = src || a.Key == "src"
					}
					if n.Data == "script" && !src {
						t.Errorf("an inline <script>")
					}
				}
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					walk(c)
				}
			}
			walk(doc)
			if strings.Contains(buf.String(), "<script>alert") {
				t.Errorf("unescaped text")
			}
			if !strings.Contains(buf.String(), `<meta name="sb-live-after" content="41">`) {
				t.Errorf("the live stream's start is missing")
			}
		})
	}
}

// TestRenderRefusesWrongData: a handler passing another page's data fails.
func TestRenderRefusesWrongData(t *testing.T) {
	if err := Render(&bytes.Buffer{}, "lage", Page{Data: Runs{}}); err == nil {
		t.Error("lage rendered the data of laeufe")
	}
	if err := Render(&bytes.Buffer{}, "nirgends", Page{}); err == nil {
		t.Error("an unknown page rendered")
	}
}

// TestStaticServesTheChartStylesheet: the charts' stylesheet, owned by
// package chart, is served beside the console's own files.
func TestStaticServesTheChartStylesheet(t *testing.T) {
	for _, name := range []string{"chart.css", "console.css", "console.js"} {
		rec := httptest.NewRecorder()
		Static().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+name, nil))
		if rec.Code != 200 || rec.Body.Len() == 0 || rec.Header().Get("ETag") == "" {
			t.Errorf("%s: %d, %d bytes, ETag %q", name, rec.Code, rec.Body.Len(), rec.Header().Get("ETag"))
		}
	}
}
