package databody

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// canonicalOf decodes a body with the decoder for its endpoint.
func canonicalOf(t *testing.T, endpoint string, body []byte) (canonical []byte, hash string) {
	t.Helper()
	var err error
	switch endpoint {
	case "forecast":
		var s *ForecastSubmission
		if s, err = DecodeForecast(body, ingesttest.AllAreas); err == nil {
			canonical, hash = s.Canonical, s.InputHash
		}
	case "master-data":
		var s *MasterDataSubmission
		if s, err = DecodeMasterData(body, ingesttest.AllAreas); err == nil {
			canonical, hash = s.Canonical, s.InputHash
		}
	case "metered":
		var s *MeteredDataSubmission
		if s, err = DecodeMeteredData(body, ingesttest.AllAreas); err == nil {
			canonical, hash = s.Canonical, s.InputHash
		}
	case "profiles":
		var s *ProfileSubmission
		if s, err = DecodeProfiles(body, ingesttest.AllAreas); err == nil {
			canonical, hash = s.Canonical, s.InputHash
		}
	}
	if err != nil {
		t.Fatalf("%s: %v\nbody: %s", endpoint, err, body)
	}
	return canonical, hash
}

var samples = map[string]string{
	"forecast_2026-03-29.json": "forecast",
	"forecast_2026-10-25.json": "forecast",
	"forecast_2026-03-28.json": "forecast",
	"masterdata.json":          "master-data",
	"metered.json":             "metered",
	"profiles.json":            "profiles",
}

// TestCanonicalGolden pins the canonical encoding of the samples: a change of
// it changes every input_hash, so that previously identical retries would no
// longer be recognised as such. Run with -update after a deliberate change.
func TestCanonicalGolden(t *testing.T) {
	for file, endpoint := range samples {
		t.Run(file, func(t *testing.T) {
			canonical, hash := canonicalOf(t, endpoint, ingesttest.ReadTestdata(t, file))
			golden := filepath.Join("testdata", strings.TrimSuffix(file, ".json")+".canonical")
			if *ingesttest.Update {
				if err := os.WriteFile(golden, canonical, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(canonical, want) {
				t.Errorf("canonical encoding changed:\n got  %s\n want %s", canonical, want)
			}
			if hash != ingest.InputHash(want) {
				t.Errorf("hash %s is not the SHA-256 of the canonical encoding", hash)
			}
		})
	}
}

// TestCanonicalIsSortedEncodingJSON holds the hand-written encoder to its
// definition: re-encoding the canonical bytes with encoding/json (which sorts
// map keys and formats float64 its way) changes nothing, and for the
// endpoints whose pipeline structs declare their fields in sorted order the
// bytes equal json.Marshal of those structs.
func TestCanonicalIsSortedEncodingJSON(t *testing.T) {
	special := `{"entries":[{"mga":"<Süd & \"Nord\">\u2028\t","profile":"H\\25","day":"2026-03-28","values_kwh":` +
		`[0, 1e-7, 0.000001, 123456789012345678, 1e21, 1e300, 5e-324, 0.1, 2.5e-3, 17, 1.7976931348623157e308, ` +
		strings.Trim(ingesttest.Nums(85), "[]") + `]}]}`
	bodies := map[string][]byte{"special characters and numbers": []byte(special)}
	kinds := map[string]string{"special characters and numbers": "profiles"}
	for file, endpoint := range samples {
		bodies[file], kinds[file] = ingesttest.ReadTestdata(t, file), endpoint
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			endpoint := kinds[name]
			canonical, _ := canonicalOf(t, endpoint, body)
			var v any
			if err := json.Unmarshal(canonical, &v); err != nil {
				t.Fatalf("canonical encoding is not JSON: %v\n%s", err, canonical)
			}
			again, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, canonical) {
				t.Errorf("not in sorted encoding/json form:\n got  %s\n want %s", canonical, again)
			}
			var direct []byte
			switch endpoint {
			case "master-data":
				s, _ := DecodeMasterData(body, ingesttest.AllAreas)
				direct, err = json.Marshal(struct {
					Locations []pipeline.Location `json:"locations"`
				}{s.Locations})
			case "metered":
				s, _ := DecodeMeteredData(body, ingesttest.AllAreas)
				direct, err = json.Marshal(struct {
					Entries []pipeline.MeteredEntry `json:"entries"`
				}{s.Entries})
			case "profiles":
				s, _ := DecodeProfiles(body, ingesttest.AllAreas)
				direct, err = json.Marshal(struct {
					Entries []pipeline.ProfileEntry `json:"entries"`
				}{s.Entries})
			default:
				return // pipeline.Series declares malo before kind
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(direct, canonical) {
				t.Errorf("differs from json.Marshal of the pipeline values:\n got  %s\n want %s", canonical, direct)
			}
		})
	}
}

// TestInputHash: the hash follows the content, not its spelling.
func TestInputHash(t *testing.T) {
	v := func(vals ...string) string {
		return "[" + strings.Join(append(vals, strings.Split(strings.Trim(ingesttest.Nums(94), "[]"), ",")...), ",") + "]"
	}
	base := `{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":` + v("1", "0.5") + `}]}`
	groups := []struct {
		endpoint string
		same     []string // all of these have the hash of the first
		other    []string // each of these has another hash
	}{
		{"forecast",
			[]string{
				base,
				"{\n  \"series\" : [ {\"values\": " + strings.ReplaceAll(v("1.0", "5e-1"), ",", ", ") + ", \"kind\": \"production\",\n \"control_area\": \"TenneT\"} ],\r\n\t\"delivery_day\": \"2026-03-28\" }",
				`{"delivery_day":"2026-03-28","validate_only":true,"series":[{"control_area":"TenneT","kind":"production","unit":"MW","values":` + v("10E-1", "0.50") + `}]}`,
				`{"delivery_day":"2026-03-28","validate_only":false,"malo_mapping":{},"series":[{"malo":null,"control_area":"TenneT","kind":"production","values":` + v("1", "0.5") + `,"note":"x"}]}`,
				`{"delivery_day":"2026-03-29","delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":` + v("1", "0.5") + `}]}`,
			},
			[]string{
				`{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":` + v("1", "0.501") + `}]}`,
				`{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":` + v("0.5", "1") + `}]}`,
				`{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"consumption","values":` + v("1", "0.5") + `}]}`,
				`{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","unit":"MWH","values":` + v("1", "0.5") + `}]}`,
				`{"delivery_day":"2026-03-28","series":[{"control_area":"Amprion","kind":"production","values":` + v("1", "0.5") + `}]}`,
				`{"delivery_day":"2026-03-28","malo_mapping":{"01234567890":"TenneT"},"series":[{"control_area":"TenneT","kind":"production","values":` + v("1", "0.5") + `}]}`,
			}},
		{"master-data",
			[]string{
				`{"locations":[{"malo":"01234567890","delivery_start":"2026-01-01","control_area":"TenneT","mga":"M","metering_type":"slp"}]}`,
				`{"locations":[{"malo":"01234567890","slices":[{"valid_from":"2026-01-01","active":true,"kind":"consumption","control_area":"TenneT","mga":"M","metering_type":"slp"}]}],"validate_only":true}`,
			},
			[]string{
				`{"locations":[{"malo":"01234567890","delivery_start":"2026-01-01","control_area":"TenneT","mga":"M","metering_type":"slp","kind":"production"}]}`,
				`{"locations":[{"malo":"01234567890","delivery_start":"2026-01-01","control_area":"TenneT","mga":"M","metering_type":"slp","valid_to":"2027-01-01"}]}`,
				`{"locations":[{"malo":"01234567890","delivery_start":"2026-01-01","control_area":"TenneT","mga":"M","metering_type":"slp","annual_consumption_kwh":0}]}`,
			}},
		{"metered",
			[]string{
				`{"entries":[{"malo":"01234567890","day":"2026-03-28","unit":"KWH","values":` + v("1", "2") + `}]}`,
				`{"validate_only":true,"entries":[{"values":` + v("1.00", "2e0") + `,"unit":"KWH","day":"2026-03-28","malo":"01234567890"}]}`,
			},
			[]string{
				`{"entries":[{"malo":"01234567890","day":"2026-03-28","unit":"MWH","values":` + v("1", "2") + `}]}`,
				`{"entries":[{"malo":"01234567891","day":"2026-03-28","unit":"KWH","values":` + v("1", "2") + `}]}`,
				`{"entries":[{"malo":"01234567890","day":"2026-03-28","unit":"KWH","values":` + v("1", "2.0000000001") + `}]}`,
			}},
		{"metered",
			[]string{
				`{"entries":[{"malo":"01234567890","day":"2026-03-28","unit":"KWH","values":` + v("0", "2") + `}]}`,
				`{"entries":[{"malo":"01234567890","day":"2026-03-28","unit":"KWH","values":` + v("-0", "2") + `}]}`,
				`{"entries":[{"malo":"01234567890","day":"2026-03-28","unit":"KWH","values":` + v("-0.0e5", "2") + `}]}`,
			},
			nil},
		{"profiles",
			[]string{
				`{"entries":[{"mga":"M","profile":"H25","day":"2026-03-28","values_kwh":` + v("1", "2") + `}]}`,
				`{"entries":[{"mga":"M","profile":"H25","day":"2026-03-28","values_kwh":` + v("1.0", "2.0") + `}],"validate_only":false}`,
			},
			[]string{
				`{"entries":[{"mga":"M","profile":"G25","day":"2026-03-28","values_kwh":` + v("1", "2") + `}]}`,
				`{"entries":[{"mga":"M","profile":"H25","day":"2026-03-28","values_kwh":` + v("2", "1") + `}]}`,
			}},
	}
	for _, g := range groups {
		t.Run(g.endpoint, func(t *testing.T) {
			_, want := canonicalOf(t, g.endpoint, []byte(g.same[0]))
			for i, body := range g.same[1:] {
				if _, got := canonicalOf(t, g.endpoint, []byte(body)); got != want {
					t.Errorf("same[%d] has another hash than same[0]", i+1)
				}
			}
			seen := map[string]int{want: -1}
			for i, body := range g.other {
				_, got := canonicalOf(t, g.endpoint, []byte(body))
				if j, dup := seen[got]; dup {
					t.Errorf("other[%d] has the hash of %d", i, j)
				}
				seen[got] = i
			}
		})
	}
}

// TestMaloMappingNeverNil: an absent malo_mapping is an empty map, in the
// value and in the canonical encoding.
func TestMaloMappingNeverNil(t *testing.T) {
	sub, err := DecodeForecast([]byte(ingesttest.ForecastBody(`{"control_area":"TenneT","kind":"production","values":`+ingesttest.Nums(96)+`}`)), ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Forecast.MaloMapping == nil {
		t.Error("MaloMapping is nil")
	}
	if want := `{"delivery_day":"2026-03-28","malo_mapping":{},"series":[{"control_area":"TenneT","kind":"production","unit":"MW","values":[0,0.25,0.5,`; !bytes.HasPrefix(sub.Canonical, []byte(want)) {
		t.Errorf("canonical = %.120s", sub.Canonical)
	}
}
