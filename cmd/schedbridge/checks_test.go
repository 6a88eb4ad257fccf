package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

type fakePortfolios struct {
	ps  []pipeline.Portfolio
	err error
}

func (f fakePortfolios) Portfolios(context.Context) ([]pipeline.Portfolio, error) { return f.ps, f.err }

func TestCheckStoredPortfolios(t *testing.T) {
	ok := pipeline.Portfolio{ID: "ok", BalancingGroup: "11XACME-ENERGIEZ", ExchangeBalancingGroup: "10X1001A1001A094"}
	none := pipeline.Portfolio{ID: "none"}
	badBG := pipeline.Portfolio{ID: "bad-bg", BalancingGroup: "11XACME-ENERGIE1"}
	badBoth := pipeline.Portfolio{ID: "bad-both", BalancingGroup: "10YDE-EON------1", ExchangeBalancingGroup: "11XEPEXSPOT-DE-X"}
	tests := []struct {
		name string
		ps   []pipeline.Portfolio
		want []string // "portfolio field" per reported line
	}{
		{"all valid", []pipeline.Portfolio{ok, none}, nil},
		{"one bad", []pipeline.Portfolio{ok, badBG, none}, []string{"bad-bg balancing_group"}},
		{"two fields", []pipeline.Portfolio{badBoth, badBG},
			[]string{"bad-both balancing_group", "bad-both exchange_balancing_group", "bad-bg balancing_group"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := checkStoredPortfolios(context.Background(), fakePortfolios{ps: tt.ps}, slog.New(slog.NewJSONHandler(&buf, nil)))
			if err != nil {
				t.Fatal(err)
			}
			lines := jsonLines(t, buf.String())
			if n != len(tt.want) || len(lines) != len(tt.want) {
				t.Fatalf("reported %d, logged %d lines, want %d:\n%s", n, len(lines), len(tt.want), buf.String())
			}
			for i, l := range lines {
				if got := l["portfolio"].(string) + " " + l["field"].(string); got != tt.want[i] || l["level"] != "ERROR" || l["err"] == "" {
					t.Errorf("line %d = %v, want an ERROR for %s", i, l, tt.want[i])
				}
			}
		})
	}
	_, err := checkStoredPortfolios(context.Background(), fakePortfolios{err: errors.New("down")}, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Error("a failed read was not reported")
	}
}

// TestPortfolioEICAtTheDoor refuses a wrong check character on both EIC
// flags of portfolio put, stores nothing, and reports a portfolio stored
// before the check (written here directly into the database) when migrate,
// run schedules and serve start, but not on other commands.
func TestPortfolioEICAtTheDoor(t *testing.T) {
	in := newInstance(t, sqldb.Postgres)
	in.env = append(in.env, "SCHEDBRIDGE_LOG_FORMAT=json")
	in.cli(0, "portfolio", "put", "acme", "--name", "ACME", "--control-areas", "TenneT", "--balancing-group", "11XACME-ENERGIEZ")
	for _, tt := range []struct {
		id, flag, value, want string
	}{
		{"new", "--balancing-group", "11XACME-ENERGIE1", `balancing_group: EIC "11XACME-ENERGIE1": wrong check character '1', want 'Z'`},
		{"new", "--exchange-balancing-group", "11XEPEXSPOT-DE-X", `exchange_balancing_group: EIC "11XEPEXSPOT-DE-X": wrong check character 'X', want 'S'`},
		{"acme", "--balancing-group", "11XACME-ENERGIE2", `balancing_group: EIC "11XACME-ENERGIE2": wrong check character '2', want 'Z'`},
		{"acme", "--balancing-group", "10YDE-EON------1", "want type X"},
	} {
		_, errOut := in.cli(2, "portfolio", "put", tt.id, "--name", "Changed", "--control-areas", "Amprion", tt.flag, tt.value)
		if !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s %s %s: stderr %q, want one line with %q", tt.id, tt.flag, tt.value, errOut, tt.want)
		}
	}
	out, _ := in.cli(0, "portfolio", "list", "--json")
	var list []pipeline.Portfolio
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "ACME" || list[0].BalancingGroup != "11XACME-ENERGIEZ" || list[0].ExchangeBalancingGroup != "" {
		t.Errorf("portfolios after refused puts = %+v", list)
	}
	_, errOut := in.cli(0, "migrate")
	if strings.Contains(errOut, "invalid EIC") {
		t.Errorf("migrate reported a valid portfolio: %s", errOut)
	}

	// A portfolio stored before the check: written past the validation.
	raw, err := sql.Open("pgx", in.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE portfolios SET balancing_group = '11XACME-ENERGIE1' WHERE id = 'acme'`); err != nil {
		t.Fatal(err)
	}
	check := func(cmd, logs string) {
		t.Helper()
		var found int
		for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil || !strings.Contains(l, "invalid EIC") {
				continue
			}
			found++
			if m["level"] != "ERROR" || m["portfolio"] != "acme" || m["field"] != "balancing_group" || m["value"] != "11XACME-ENERGIE1" ||
				!strings.Contains(m["err"].(string), "want 'Z'") {
				t.Errorf("%s: line %s", cmd, l)
			}
		}
		if found != 1 {
			t.Errorf("%s: %d invalid-EIC lines, want 1:\n%s", cmd, found, logs)
		}
	}
	_, errOut = in.cli(0, "migrate")
	check("migrate", errOut)
	// The schedules stage has nothing to build on here and fails; the
	// portfolio is reported before it.
	_, errOut = in.cli(1, "run", "schedules")
	check("run schedules", errOut)
	_, errOut = in.cli(0, "portfolio", "list")
	if strings.Contains(errOut, "invalid EIC") {
		t.Errorf("portfolio list ran the startup check: %s", errOut)
	}
	srv, logs := in.serve()
	stop(t, srv, logs)
	check("serve", logs.String())
}
