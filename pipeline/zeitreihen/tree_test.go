package zeitreihen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Key day of the tests.
var stichtag = pipeline.NewDay(2026, time.March, 10)

func day(offset int) pipeline.Day { return stichtag.AddDays(offset) }

func dp(offset int) *pipeline.Day { d := day(offset); return &d }

var t0 = time.Date(2026, time.February, 1, 8, 0, 0, 0, time.UTC)

func entry(dso, area string, zone pipeline.ControlArea, p Prognoseart, lb, n int) Entry {
	return Entry{NetzbetreiberMPID: dso, Bilanzierungsgebiet: area, Regelzone: zone, Prognoseart: p, Lieferbeginn: day(lb), Anzahl: n}
}

func snap(es ...Entry) *StoredSnapshot {
	return &StoredSnapshot{ID: 1, Snapshot: Snapshot{Eintraege: es, Quelle: "test", Stand: t0}, ReceivedAt: t0}
}

// rec is an activation record of the default cell (BKV, D1, A1, BK1, SLS).
func rec(act Action, ab int, bis *pipeline.Day, src Source, recvHours int, ref string) StoredActivation {
	return StoredActivation{
		Activation: Activation{
			Marktrolle: RoleBKV, NetzbetreiberMPID: "D1", Bilanzierungsgebiet: "A1", Bilanzkreis: "BK1",
			Zeitreihentyp: SLS, Aktion: act, GueltigAb: day(ab), GueltigBis: bis, Referenz: ref,
		},
		Quelle: src, SourceKey: string(src), ReceivedAt: t0.Add(time.Duration(recvHours) * time.Hour),
	}
}

func baseInput() Input {
	return Input{
		Contracts: map[pipeline.ControlArea][]string{pipeline.TenneT: {"BK1"}},
		Stichtag:  stichtag,
		Rules:     DefaultRules(),
	}
}

// findCell returns the cell at role/dso/area/contract/type, or nil.
func findCell(tr Tree, role Role, dso, area, contract string, typ SeriesType) *Cell {
	for _, rn := range tr.Knoten {
		if rn.Marktrolle != role {
			continue
		}
		for _, an := range rn.Knoten {
			if an.NetzbetreiberMPID != dso || an.Bilanzierungsgebiet != area {
				continue
			}
			for _, cn := range an.Knoten {
				if cn.Vertrag != contract {
					continue
				}
				for i := range cn.Zeitreihen {
					if cn.Zeitreihen[i].Zeitreihentyp == typ {
						return &cn.Zeitreihen[i]
					}
				}
			}
		}
	}
	return nil
}

// paths lists the tree's cells as role/dso/area/contract/type=zustand, in
// tree order, and the contract nodes without cells as role/dso/area/contract.
func paths(tr Tree) []string {
	out := []string{}
	for _, rn := range tr.Knoten {
		for _, an := range rn.Knoten {
			for _, cn := range an.Knoten {
				p := fmt.Sprintf("%s/%s/%s/%s", rn.Marktrolle, an.NetzbetreiberMPID, an.Bilanzierungsgebiet, cn.Vertrag)
				if len(cn.Zeitreihen) == 0 {
					out = append(out, p)
				}
				for _, c := range cn.Zeitreihen {
					out = append(out, fmt.Sprintf("%s/%s=%s", p, c.Zeitreihentyp, c.Zustand))
				}
			}
		}
	}
	return out
}

func TestBuildTreeCellState(t *testing.T) {
	slp := entry("D1", "A1", pipeline.TenneT, PrognoseSLP, -5, 7)
	slpFuture := entry("D1", "A1", pipeline.TenneT, PrognoseSLP, 3, 7)
	rlm := entry("D1", "A1", pipeline.TenneT, PrognoseRLM, -5, 2) // makes the area known, expects no SLS
	tests := []struct {
		name  string
		entry Entry
		recs  []StoredActivation
		want  Cell
	}{
		{
			name:  "expected, supply started, no records: fehlt",
			entry: slp,
			want:  Cell{Zeitreihentyp: SLS, Zustand: Fehlt, BenoetigtAb: dp(-5), Kunden: 7},
		},
		{
			name:  "expected, supply starts on the key day: fehlt",
			entry: entry("D1", "A1", pipeline.TenneT, PrognoseSLP, 0, 7),
			want:  Cell{Zeitreihentyp: SLS, Zustand: Fehlt, BenoetigtAb: dp(0), Kunden: 7},
		},
		{
			name:  "expected, supply starts the day after: erwartet",
			entry: slpFuture,
			want:  Cell{Zeitreihentyp: SLS, Zustand: Erwartet, BenoetigtAb: dp(3), Kunden: 7},
		},
		{
			name:  "expected and active: aktiv",
			entry: slp,
			recs:  []StoredActivation{rec(Aktivierung, -10, nil, SourceUTILMD, 0, "TX1")},
			want:  Cell{Zeitreihentyp: SLS, Zustand: Aktiv, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-10), Quelle: SourceUTILMD, Referenz: "TX1"},
		},
		{
			name:  "activation starting on the key day is active",
			entry: slp,
			recs:  []StoredActivation{rec(Aktivierung, 0, nil, SourceImport, 0, "")},
			want:  Cell{Zeitreihentyp: SLS, Zustand: Aktiv, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(0), Quelle: SourceImport},
		},
		{
			name:  "activation ending the day after the key day is active",
			entry: slp,
			recs:  []StoredActivation{rec(Aktivierung, -10, dp(1), SourceUTILMD, 0, "")},
			want:  Cell{Zeitreihentyp: SLS, Zustand: Aktiv, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-10), AktivBis: dp(1), Quelle: SourceUTILMD},
		},
		{
			name:  "expected, activation ended on the key day: fehlt",
			entry: slp,
			recs:  []StoredActivation{rec(Aktivierung, -10, dp(0), SourceUTILMD, 0, "")},
			want: Cell{Zeitreihentyp: SLS, Zustand: Fehlt, BenoetigtAb: dp(-5), Kunden: 7,
				AktivAb: dp(-10), AktivBis: dp(0), DeaktiviertAb: dp(0), Quelle: SourceUTILMD},
		},
		{
			name:  "expected, activation ended before supply start in future: erwartet",
			entry: slpFuture,
			recs:  []StoredActivation{rec(Aktivierung, -10, dp(-2), SourceImport, 0, "")},
			want: Cell{Zeitreihentyp: SLS, Zustand: Erwartet, BenoetigtAb: dp(3), Kunden: 7,
				AktivAb: dp(-10), AktivBis: dp(-2), DeaktiviertAb: dp(-2), Quelle: SourceImport},
		},
		{
			name:  "not expected, active: unerwartet",
			entry: rlm,
			recs:  []StoredActivation{rec(Aktivierung, -10, nil, SourceUTILMD, 0, "TX")},
			want:  Cell{Zeitreihentyp: SLS, Zustand: Unerwartet, AktivAb: dp(-10), Quelle: SourceUTILMD, Referenz: "TX"},
		},
		{
			name:  "not expected, activation ended: deaktiviert",
			entry: rlm,
			recs:  []StoredActivation{rec(Aktivierung, -10, dp(-1), SourceUTILMD, 0, "")},
			want: Cell{Zeitreihentyp: SLS, Zustand: Deaktiviert, AktivAb: dp(-10), AktivBis: dp(-1),
				DeaktiviertAb: dp(-1), Quelle: SourceUTILMD},
		},
		{
			name:  "not expected, deactivated after activation: deaktiviert with the activation",
			entry: rlm,
			recs: []StoredActivation{
				rec(Deaktivierung, -3, nil, SourceUTILMD, 5, "TX-D"),
				rec(Aktivierung, -20, nil, SourceUTILMD, 0, "TX-A0"),
				rec(Aktivierung, -10, dp(30), SourceUTILMD, 1, "TX-A"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Deaktiviert, AktivAb: dp(-10), AktivBis: dp(30),
				DeaktiviertAb: dp(-3), Quelle: SourceUTILMD, Referenz: "TX-D"},
		},
		{
			name:  "expected, deactivated after activation: fehlt",
			entry: slp,
			recs: []StoredActivation{
				rec(Aktivierung, -10, nil, SourceUTILMD, 0, ""),
				rec(Deaktivierung, -1, nil, SourceUTILMD, 1, "TX-D"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Fehlt, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-10),
				DeaktiviertAb: dp(-1), Quelle: SourceUTILMD, Referenz: "TX-D"},
		},
		{
			name:  "deactivation without any activation before it",
			entry: rlm,
			recs:  []StoredActivation{rec(Deaktivierung, -1, nil, SourceUTILMD, 1, "")},
			want:  Cell{Zeitreihentyp: SLS, Zustand: Deaktiviert, DeaktiviertAb: dp(-1), Quelle: SourceUTILMD},
		},
		{
			name:  "deactivation in the future leaves the activation in force",
			entry: slp,
			recs: []StoredActivation{
				rec(Aktivierung, -10, nil, SourceUTILMD, 0, "A"),
				rec(Deaktivierung, 4, nil, SourceUTILMD, 1, "D"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Aktiv, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-10), Quelle: SourceUTILMD, Referenz: "A"},
		},
		{
			name:  "reactivation after a deactivation: aktiv",
			entry: slp,
			recs: []StoredActivation{
				rec(Aktivierung, -10, nil, SourceUTILMD, 0, "A1"),
				rec(Deaktivierung, -6, nil, SourceUTILMD, 1, "D"),
				rec(Aktivierung, -2, nil, SourceUTILMD, 2, "A2"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Aktiv, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-2), Quelle: SourceUTILMD, Referenz: "A2"},
		},
		{
			name:  "not expected, future activation (pending): unerwartet",
			entry: rlm,
			recs: []StoredActivation{
				rec(Aktivierung, 9, nil, SourceUTILMD, 0, "later"),
				rec(Aktivierung, 4, dp(40), SourceUTILMD, 0, "sooner"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Unerwartet, AktivAb: dp(4), AktivBis: dp(40), Quelle: SourceUTILMD, Referenz: "sooner"},
		},
		{
			name:  "expected, future activation after supply start: fehlt",
			entry: slp,
			recs:  []StoredActivation{rec(Aktivierung, 4, nil, SourceImport, 0, "")},
			want:  Cell{Zeitreihentyp: SLS, Zustand: Fehlt, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(4), Quelle: SourceImport},
		},
		{
			name:  "expected, future activation in time: erwartet",
			entry: slpFuture,
			recs:  []StoredActivation{rec(Aktivierung, 3, nil, SourceImport, 0, "")},
			want:  Cell{Zeitreihentyp: SLS, Zustand: Erwartet, BenoetigtAb: dp(3), Kunden: 7, AktivAb: dp(3), Quelle: SourceImport},
		},
		{
			name:  "not expected, only a future deactivation: deaktiviert",
			entry: rlm,
			recs: []StoredActivation{
				rec(Deaktivierung, 6, nil, SourceUTILMD, 0, "late"),
				rec(Deaktivierung, 2, nil, SourceUTILMD, 0, "early"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Deaktiviert, DeaktiviertAb: dp(2), Quelle: SourceUTILMD, Referenz: "early"},
		},
		{
			name:  "tie on gueltig_ab: the later received deactivation wins",
			entry: slp,
			recs: []StoredActivation{
				rec(Deaktivierung, -2, nil, SourceImport, 2, "D"),
				rec(Aktivierung, -2, nil, SourceUTILMD, 1, "A"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Fehlt, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-2), DeaktiviertAb: dp(-2), Quelle: SourceImport, Referenz: "D"},
		},
		{
			name:  "tie on gueltig_ab: the later received activation wins",
			entry: slp,
			recs: []StoredActivation{
				rec(Deaktivierung, -2, nil, SourceUTILMD, 1, "D"),
				rec(Aktivierung, -2, nil, SourceImport, 2, "A"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Aktiv, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-2), Quelle: SourceImport, Referenz: "A"},
		},
		{
			name:  "full tie: utilmd deactivation beats imported activation",
			entry: slp,
			recs: []StoredActivation{
				rec(Deaktivierung, -2, nil, SourceUTILMD, 1, "D"),
				rec(Aktivierung, -2, nil, SourceImport, 1, "A"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Fehlt, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-2), DeaktiviertAb: dp(-2), Quelle: SourceUTILMD, Referenz: "D"},
		},
		{
			name:  "full tie: utilmd activation beats imported deactivation",
			entry: slp,
			recs: []StoredActivation{
				rec(Aktivierung, -2, nil, SourceUTILMD, 1, "A"),
				rec(Deaktivierung, -2, nil, SourceImport, 1, "D"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Aktiv, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-2), Quelle: SourceUTILMD, Referenz: "A"},
		},
		{
			name:  "later gueltig_ab beats later receipt",
			entry: slp,
			recs: []StoredActivation{
				rec(Aktivierung, -1, nil, SourceImport, 0, "A"),
				rec(Deaktivierung, -4, nil, SourceUTILMD, 9, "D"),
			},
			want: Cell{Zeitreihentyp: SLS, Zustand: Aktiv, BenoetigtAb: dp(-5), Kunden: 7, AktivAb: dp(-1), Quelle: SourceImport, Referenz: "A"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			in.Snapshot = snap(tc.entry)
			in.Activations = tc.recs
			got := findCell(BuildTree(in), RoleBKV, "D1", "A1", "BK1", SLS)
			if got == nil {
				t.Fatalf("no cell BKV/D1/A1/BK1/SLS")
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("cell = %s\nwant   %s", jsonOf(t, got), jsonOf(t, tc.want))
			}
			// The records are towards BKV only: the LF cell is as expected
			// without them, or absent.
			lf := findCell(BuildTree(in), RoleLF, "D1", "A1", "BK1", SLS)
			if tc.want.BenoetigtAb == nil {
				if lf != nil {
					t.Errorf("LF cell %+v, want none", lf)
				}
			} else if lf == nil || lf.Zustand == Aktiv || lf.Quelle != "" {
				t.Errorf("LF cell %+v, want an unactivated expected cell", lf)
			}
		})
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBuildTreeExpectation checks BenoetigtAb and Kunden summed over the
// entries needing a series, including PAUSCHAL counted as SLP.
func TestBuildTreeExpectation(t *testing.T) {
	in := baseInput()
	in.Snapshot = snap(
		entry("D1", "A1", pipeline.TenneT, PrognoseSLP, 5, 3),
		entry("D1", "A1", pipeline.TenneT, PrognosePauschal, -2, 4),
		entry("D1", "A1", pipeline.TenneT, PrognoseRLM, 8, 1),
		entry("D1", "A1", pipeline.TenneT, PrognoseIMS, 2, 6),
		entry("D1", "A1", pipeline.TenneT, PrognoseTLPGetrennt, 1, 5),
		entry("D1", "A1", pipeline.TenneT, "", -9, 11),
	)
	tr := BuildTree(in)
	want := []string{
		"BKV/D1/A1/BK1/SLS=fehlt", "BKV/D1/A1/BK1/TLS=erwartet", "BKV/D1/A1/BK1/LGS=erwartet",
		"LF/D1/A1/BK1/SLS=fehlt", "LF/D1/A1/BK1/TLS=erwartet", "LF/D1/A1/BK1/LGS=erwartet",
	}
	if got := paths(tr); !slices.Equal(got, want) {
		t.Fatalf("paths = %v\nwant %v", got, want)
	}
	for _, c := range []struct {
		typ    SeriesType
		ab     pipeline.Day
		kunden int
	}{{SLS, day(-2), 7}, {TLS, day(1), 5}, {LGS, day(2), 7}} {
		cell := findCell(tr, RoleLF, "D1", "A1", "BK1", c.typ)
		if *cell.BenoetigtAb != c.ab || cell.Kunden != c.kunden {
			t.Errorf("%s: benoetigt_ab %v kunden %d, want %v %d", c.typ, *cell.BenoetigtAb, cell.Kunden, c.ab, c.kunden)
		}
	}
	wantK := Customers{IMSys: 6, RLM: 1, SLP: 7, TLP: 5, OhneTyp: 11}
	if tr.Kunden != wantK || tr.Knoten[0].Kunden != wantK || tr.Knoten[0].Knoten[0].Knoten[0].Kunden != wantK {
		t.Errorf("kunden root %+v role %+v contract %+v, want %+v", tr.Kunden, tr.Knoten[0].Kunden, tr.Knoten[0].Knoten[0].Knoten[0].Kunden, wantK)
	}
	if want := (Counts{Erwartet: 4, Fehlt: 2}); tr.Zaehler != want {
		t.Errorf("zaehler = %+v, want %+v", tr.Zaehler, want)
	}
}

// TestBuildTreeContracts covers two contracts in one control area, the
// default contract and the empty contract.
func TestBuildTreeContracts(t *testing.T) {
	in := baseInput()
	in.Rules.Roles = []Role{RoleBKV}
	in.Contracts = map[pipeline.ControlArea][]string{pipeline.TenneT: {"BK2", "BK1", "BK2"}, pipeline.Amprion: {}}
	in.DefaultContracts = []string{"BKD"}
	in.Snapshot = snap(
		entry("D1", "A1", pipeline.TenneT, PrognoseSLP, -1, 1),
		entry("D2", "A2", pipeline.Amprion, PrognoseSLP, -1, 2),
	)
	tr := BuildTree(in)
	want := []string{"BKV/D1/A1/BK1/SLS=fehlt", "BKV/D1/A1/BK2/SLS=fehlt", "BKV/D2/A2/BKD/SLS=fehlt"}
	if got := paths(tr); !slices.Equal(got, want) {
		t.Fatalf("paths = %v\nwant %v", got, want)
	}
	if !slices.Equal(tr.Vertraege, []string{"BK1", "BK2", "BKD"}) || !slices.Equal(tr.Knoten[0].Knoten[0].Vertraege, []string{"BK1", "BK2"}) ||
		!slices.Equal(tr.Knoten[0].Knoten[0].Knoten[1].Vertraege, []string{"BK2"}) {
		t.Errorf("vertraege root %v area %v contract %v", tr.Vertraege, tr.Knoten[0].Knoten[0].Vertraege, tr.Knoten[0].Knoten[0].Knoten[1].Vertraege)
	}
	// Both contract nodes carry the area's customers; the area counts them once.
	a := tr.Knoten[0].Knoten[0]
	if a.Kunden.SLP != 1 || a.Knoten[0].Kunden.SLP != 1 || a.Knoten[1].Kunden.SLP != 1 || tr.Kunden.SLP != 3 {
		t.Errorf("kunden area %+v contracts %+v %+v root %+v", a.Kunden, a.Knoten[0].Kunden, a.Knoten[1].Kunden, tr.Kunden)
	}
	if tr.Zaehler.Fehlt != 3 || a.Zaehler.Fehlt != 2 {
		t.Errorf("zaehler root %+v area %+v", tr.Zaehler, a.Zaehler)
	}

	// Without any contract the series hang under the contract "", which
	// shows but is not listed in Vertraege.
	in.Contracts, in.DefaultContracts = nil, nil
	tr = BuildTree(in)
	want = []string{"BKV/D1/A1//SLS=fehlt", "BKV/D2/A2//SLS=fehlt"}
	if got := paths(tr); !slices.Equal(got, want) {
		t.Fatalf("paths = %v\nwant %v", got, want)
	}
	cn := tr.Knoten[0].Knoten[0].Knoten[0]
	if len(tr.Vertraege) != 0 || len(cn.Vertraege) != 0 || cn.Vertraege == nil || tr.Vertraege == nil {
		t.Errorf("vertraege root %#v contract %#v, want empty", tr.Vertraege, cn.Vertraege)
	}

	// A record for a contract the configuration does not know adds a node.
	in.Activations = []StoredActivation{rec(Aktivierung, -3, nil, SourceUTILMD, 0, "")}
	in.Activations[0].Bilanzierungsgebiet = "A1"
	tr = BuildTree(in)
	want = []string{"BKV/D1/A1//SLS=fehlt", "BKV/D1/A1/BK1/SLS=unerwartet", "BKV/D2/A2//SLS=fehlt"}
	if got := paths(tr); !slices.Equal(got, want) {
		t.Fatalf("paths = %v\nwant %v", got, want)
	}
	if !slices.Equal(tr.Vertraege, []string{"BK1"}) {
		t.Errorf("vertraege = %v", tr.Vertraege)
	}
}

// TestBuildTreeOhneTyp checks that customers without a forecast type expect
// no series but are counted, also in an area that has nothing else.
func TestBuildTreeOhneTyp(t *testing.T) {
	in := baseInput()
	in.Rules.Types[GroupOhneTyp] = []SeriesType{SLS} // ignored: no type can be derived
	in.Snapshot = snap(
		entry("D1", "A1", pipeline.TenneT, "", -1, 4),
		entry("D1", "A1", pipeline.TenneT, "", 2, 1),
		entry("D2", "A2", pipeline.TenneT, PrognoseRLM, 2, 1),
	)
	tr := BuildTree(in)
	want := []string{"BKV/D1/A1/BK1", "BKV/D2/A2/BK1/LGS=erwartet", "LF/D1/A1/BK1", "LF/D2/A2/BK1/LGS=erwartet"}
	if got := paths(tr); !slices.Equal(got, want) {
		t.Fatalf("paths = %v\nwant %v", got, want)
	}
	if want := (Customers{OhneTyp: 5, RLM: 1}); tr.Kunden != want || tr.Knoten[1].Kunden != want {
		t.Errorf("kunden root %+v LF %+v, want %+v", tr.Kunden, tr.Knoten[1].Kunden, want)
	}
	if tr.Zaehler != (Counts{Erwartet: 2}) {
		t.Errorf("zaehler = %+v", tr.Zaehler)
	}
}

// TestBuildTreeRootCustomers checks that the root counts an area's customers
// once although the area shows under both roles.
func TestBuildTreeRootCustomers(t *testing.T) {
	in := baseInput()
	in.Snapshot = snap(
		entry("D1", "A1", pipeline.TenneT, PrognoseSLP, -1, 10),
		entry("D1", "A2", pipeline.TenneT, PrognoseTLPGemeinsam, -1, 20),
		entry("D2", "A1", pipeline.TenneT, PrognoseIMS, -1, 30),
	)
	tr := BuildTree(in)
	want := Customers{SLP: 10, TLP: 20, IMSys: 30}
	if len(tr.Knoten) != 2 {
		t.Fatalf("roles = %d", len(tr.Knoten))
	}
	for _, rn := range tr.Knoten {
		if rn.Kunden != want {
			t.Errorf("%s kunden = %+v, want %+v", rn.Marktrolle, rn.Kunden, want)
		}
		if rn.Zaehler != (Counts{Fehlt: 3}) {
			t.Errorf("%s zaehler = %+v", rn.Marktrolle, rn.Zaehler)
		}
	}
	if tr.Kunden != want {
		t.Errorf("root kunden = %+v, want %+v", tr.Kunden, want)
	}
	if tr.Zaehler != (Counts{Fehlt: 6}) {
		t.Errorf("root zaehler = %+v", tr.Zaehler)
	}
}

// filterInput has two DSOs in two control areas, an area known only from a
// record, and a record towards a role outside the rules.
func filterInput() Input {
	in := baseInput()
	in.Contracts[pipeline.Amprion] = []string{"BK9"}
	in.Names = map[string]string{"D1": "Registry One", "D3": "Registry Three"}
	e1 := entry("D1", "A1", pipeline.TenneT, PrognoseSLP, -1, 1)
	e1.Netzbetreiber = "Snapshot One"
	in.Snapshot = snap(
		e1,
		entry("D1", "A1", pipeline.TenneT, PrognoseRLM, 5, 2),
		entry("D2", "A2", pipeline.Amprion, PrognoseSLP, -1, 4),
	)
	a := func(role Role, dso, area, bk string, typ SeriesType, act Action, bis *pipeline.Day) StoredActivation {
		r := rec(act, -5, bis, SourceUTILMD, 0, "")
		r.Marktrolle, r.NetzbetreiberMPID, r.Bilanzierungsgebiet, r.Bilanzkreis, r.Zeitreihentyp = role, dso, area, bk, typ
		return r
	}
	in.Activations = []StoredActivation{
		a(RoleBKV, "D1", "A1", "BK1", SLS, Aktivierung, nil),
		a(RoleLF, "D2", "A2", "BK9", TLS, Aktivierung, nil),
		a(RoleBKV, "D3", "A3", "BK1", SLS, Aktivierung, dp(-1)),
		a("UNB", "D1", "A1", "BK1", SLS, Aktivierung, nil),
	}
	return in
}

func TestBuildTreeFilter(t *testing.T) {
	all := []string{
		"BKV/D1/A1/BK1/SLS=aktiv", "BKV/D1/A1/BK1/LGS=erwartet",
		"BKV/D2/A2/BK9/SLS=fehlt",
		"BKV/D3/A3/BK1/SLS=deaktiviert",
		"LF/D1/A1/BK1/SLS=fehlt", "LF/D1/A1/BK1/LGS=erwartet",
		"LF/D2/A2/BK9/SLS=fehlt", "LF/D2/A2/BK9/TLS=unerwartet",
		"UNB/D1/A1/BK1/SLS=unerwartet",
	}
	tests := []struct {
		name    string
		filter  Filter
		roles   []Role
		paths   []string
		kunden  Customers
		zaehler Counts
	}{
		{
			name:    "none",
			roles:   []Role{RoleBKV, RoleLF, "UNB"},
			paths:   all,
			kunden:  Customers{SLP: 5, RLM: 2},
			zaehler: Counts{Aktiv: 1, Erwartet: 2, Fehlt: 3, Deaktiviert: 1, Unerwartet: 2},
		},
		{
			name:   "netzbetreiber",
			filter: Filter{Netzbetreiber: "D2"},
			roles:  []Role{RoleBKV, RoleLF},
			paths:  []string{"BKV/D2/A2/BK9/SLS=fehlt", "LF/D2/A2/BK9/SLS=fehlt", "LF/D2/A2/BK9/TLS=unerwartet"},
			kunden: Customers{SLP: 4}, zaehler: Counts{Fehlt: 2, Unerwartet: 1},
		},
		{
			name:   "bilanzierungsgebiet",
			filter: Filter{Bilanzierungsgebiet: "A3"},
			roles:  []Role{RoleBKV, RoleLF},
			paths:  []string{"BKV/D3/A3/BK1/SLS=deaktiviert"},
			kunden: Customers{}, zaehler: Counts{Deaktiviert: 1},
		},
		{
			name:   "regelzone",
			filter: Filter{Regelzone: pipeline.TenneT},
			roles:  []Role{RoleBKV, RoleLF, "UNB"},
			paths: []string{
				"BKV/D1/A1/BK1/SLS=aktiv", "BKV/D1/A1/BK1/LGS=erwartet",
				"LF/D1/A1/BK1/SLS=fehlt", "LF/D1/A1/BK1/LGS=erwartet",
				"UNB/D1/A1/BK1/SLS=unerwartet",
			},
			kunden: Customers{SLP: 1, RLM: 2}, zaehler: Counts{Aktiv: 1, Erwartet: 2, Fehlt: 1, Unerwartet: 1},
		},
		{
			name:   "marktrolle",
			filter: Filter{Marktrolle: RoleLF},
			roles:  []Role{RoleLF},
			paths:  []string{"LF/D1/A1/BK1/SLS=fehlt", "LF/D1/A1/BK1/LGS=erwartet", "LF/D2/A2/BK9/SLS=fehlt", "LF/D2/A2/BK9/TLS=unerwartet"},
			kunden: Customers{SLP: 5, RLM: 2}, zaehler: Counts{Erwartet: 1, Fehlt: 2, Unerwartet: 1},
		},
		{
			name:   "marktrolle outside the rules",
			filter: Filter{Marktrolle: "UNB"},
			roles:  []Role{"UNB"},
			paths:  []string{"UNB/D1/A1/BK1/SLS=unerwartet"},
			kunden: Customers{SLP: 1, RLM: 2}, zaehler: Counts{Unerwartet: 1},
		},
		{
			name:   "zustand drops empty nodes and recounts",
			filter: Filter{Zustand: Fehlt},
			roles:  []Role{RoleBKV, RoleLF},
			paths:  []string{"BKV/D2/A2/BK9/SLS=fehlt", "LF/D1/A1/BK1/SLS=fehlt", "LF/D2/A2/BK9/SLS=fehlt"},
			kunden: Customers{SLP: 5, RLM: 2}, zaehler: Counts{Fehlt: 3},
		},
		{
			name:   "zustand drops an area's customers with the area",
			filter: Filter{Zustand: Unerwartet},
			roles:  []Role{RoleLF, "UNB"},
			paths:  []string{"LF/D2/A2/BK9/TLS=unerwartet", "UNB/D1/A1/BK1/SLS=unerwartet"},
			kunden: Customers{SLP: 5, RLM: 2}, zaehler: Counts{Unerwartet: 2},
		},
		{
			name:   "zustand and netzbetreiber",
			filter: Filter{Zustand: Aktiv, Netzbetreiber: "D1"},
			roles:  []Role{RoleBKV},
			paths:  []string{"BKV/D1/A1/BK1/SLS=aktiv"},
			kunden: Customers{SLP: 1, RLM: 2}, zaehler: Counts{Aktiv: 1},
		},
		{
			name:   "zustand matching nothing",
			filter: Filter{Zustand: Aktiv, Netzbetreiber: "D2"},
			roles:  []Role{},
			paths:  []string{},
		},
		{
			name:   "netzbetreiber matching nothing keeps the configured roles",
			filter: Filter{Netzbetreiber: "D9"},
			roles:  []Role{RoleBKV, RoleLF},
			paths:  []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := filterInput()
			in.Filter = tc.filter
			tr := BuildTree(in)
			roles := []Role{}
			for _, rn := range tr.Knoten {
				roles = append(roles, rn.Marktrolle)
			}
			if !slices.Equal(roles, tc.roles) {
				t.Errorf("roles = %v, want %v", roles, tc.roles)
			}
			if got := paths(tr); !slices.Equal(got, tc.paths) {
				t.Errorf("paths = %v\nwant %v", got, tc.paths)
			}
			if tr.Kunden != tc.kunden {
				t.Errorf("kunden = %+v, want %+v", tr.Kunden, tc.kunden)
			}
			if tr.Zaehler != tc.zaehler {
				t.Errorf("zaehler = %+v, want %+v", tr.Zaehler, tc.zaehler)
			}
			checkSums(t, tr)
		})
	}
}

// checkSums verifies that every node's counts, customers and contracts add
// up from the nodes below it.
func checkSums(t *testing.T, tr Tree) {
	t.Helper()
	var rootZ Counts
	var rootV []string
	for _, rn := range tr.Knoten {
		var z Counts
		var k Customers
		var v []string
		for _, an := range rn.Knoten {
			var az Counts
			var av []string
			for _, cn := range an.Knoten {
				var cz Counts
				for _, c := range cn.Zeitreihen {
					cz.inc(c.Zustand)
				}
				if cz != cn.Zaehler || cn.Kunden != an.Kunden {
					t.Errorf("contract node %s/%s/%s: zaehler %+v from cells %+v, kunden %+v area %+v", rn.Marktrolle, an.NetzbetreiberMPID, cn.Vertrag, cn.Zaehler, cz, cn.Kunden, an.Kunden)
				}
				az.add(cz)
				av = append(av, cn.Vertraege...)
			}
			if az != an.Zaehler || !slices.Equal(sortedUnique(av), an.Vertraege) {
				t.Errorf("area node %s/%s: zaehler %+v vertraege %v, from below %+v %v", rn.Marktrolle, an.NetzbetreiberMPID, an.Zaehler, an.Vertraege, az, av)
			}
			z.add(az)
			k.addAll(an.Kunden)
			v = append(v, av...)
		}
		if z != rn.Zaehler || k != rn.Kunden || !slices.Equal(sortedUnique(v), rn.Vertraege) {
			t.Errorf("role node %s: %+v %+v %v, from below %+v %+v %v", rn.Marktrolle, rn.Zaehler, rn.Kunden, rn.Vertraege, z, k, v)
		}
		rootZ.add(z)
		rootV = append(rootV, v...)
	}
	if rootZ != tr.Zaehler || !slices.Equal(sortedUnique(rootV), tr.Vertraege) {
		t.Errorf("root: %+v %v, from below %+v %v", tr.Zaehler, tr.Vertraege, rootZ, rootV)
	}
}

// TestBuildTreeAreaNodes checks names, control areas and ordering.
func TestBuildTreeAreaNodes(t *testing.T) {
	in := filterInput()
	in.Rules.Roles = []Role{RoleLF, RoleBKV, RoleLF}
	tr := BuildTree(in)
	var roles []Role
	for _, rn := range tr.Knoten {
		roles = append(roles, rn.Marktrolle)
	}
	if !slices.Equal(roles, []Role{RoleLF, RoleBKV, "UNB"}) {
		t.Fatalf("roles = %v", roles)
	}
	type area struct {
		dso, name, area string
		zone            pipeline.ControlArea
	}
	var got []area
	for _, an := range tr.Knoten[1].Knoten {
		got = append(got, area{an.NetzbetreiberMPID, an.Netzbetreiber, an.Bilanzierungsgebiet, an.Regelzone})
	}
	want := []area{
		{"D1", "Snapshot One", "A1", pipeline.TenneT},
		{"D2", "", "A2", pipeline.Amprion},
		{"D3", "Registry Three", "A3", ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("areas = %+v\nwant %+v", got, want)
	}
}

func TestBuildTreeEmpty(t *testing.T) {
	in := baseInput()
	tr := BuildTree(in)
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"vertraege":[],"kunden":{"imsys":0,"rlm":0,"slp":0,"tlp":0,"ohne_typ":0},"zaehler":{"erwartet":0,"aktiv":0,"deaktiviert":0,"fehlt":0,"unerwartet":0},"knoten":[` +
		`{"marktrolle":"BKV","vertraege":[],"kunden":{"imsys":0,"rlm":0,"slp":0,"tlp":0,"ohne_typ":0},"zaehler":{"erwartet":0,"aktiv":0,"deaktiviert":0,"fehlt":0,"unerwartet":0},"knoten":[]},` +
		`{"marktrolle":"LF","vertraege":[],"kunden":{"imsys":0,"rlm":0,"slp":0,"tlp":0,"ohne_typ":0},"zaehler":{"erwartet":0,"aktiv":0,"deaktiviert":0,"fehlt":0,"unerwartet":0},"knoten":[]}]}`
	if string(b) != want {
		t.Errorf("json = %s\nwant %s", b, want)
	}
	in.Filter.Zustand = Fehlt
	if b := jsonOf(t, BuildTree(in)); !strings.HasSuffix(b, `"knoten":[]}`) {
		t.Errorf("filtered empty tree = %s", b)
	}
}

// TestBuildTreeSlicesNonNil walks a full tree for nil slices.
func TestBuildTreeSlicesNonNil(t *testing.T) {
	tr := BuildTree(filterInput())
	if tr.Vertraege == nil || tr.Knoten == nil {
		t.Fatal("root slice nil")
	}
	for _, rn := range tr.Knoten {
		if rn.Vertraege == nil || rn.Knoten == nil {
			t.Errorf("role %s: nil slice", rn.Marktrolle)
		}
		for _, an := range rn.Knoten {
			if an.Vertraege == nil || an.Knoten == nil {
				t.Errorf("area %s: nil slice", an.Bilanzierungsgebiet)
			}
			for _, cn := range an.Knoten {
				if cn.Vertraege == nil || cn.Zeitreihen == nil {
					t.Errorf("contract %s: nil slice", cn.Vertrag)
				}
			}
		}
	}
}

// TestBuildTreeDeterministic shuffles every input slice and expects the
// same tree.
func TestBuildTreeDeterministic(t *testing.T) {
	in := largeInput(40, 2000)
	in.Filter = Filter{}
	want := BuildTree(in)
	if len(want.Knoten) == 0 || want.Zaehler == (Counts{}) {
		t.Fatal("empty tree")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5 {
		sh := in
		sh.Snapshot = &StoredSnapshot{Snapshot: Snapshot{Eintraege: slices.Clone(in.Snapshot.Eintraege)}}
		sh.Activations = slices.Clone(in.Activations)
		rng.Shuffle(len(sh.Snapshot.Eintraege), func(i, j int) {
			sh.Snapshot.Eintraege[i], sh.Snapshot.Eintraege[j] = sh.Snapshot.Eintraege[j], sh.Snapshot.Eintraege[i]
		})
		rng.Shuffle(len(sh.Activations), func(i, j int) { sh.Activations[i], sh.Activations[j] = sh.Activations[j], sh.Activations[i] })
		if got := BuildTree(sh); !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffle %d: tree differs", i)
		}
	}
}

// TestBuildTreeDoesNotModifyInput compares the input before and after, and
// checks that the tree does not alias the records' days.
func TestBuildTreeDoesNotModifyInput(t *testing.T) {
	in := largeInput(20, 800)
	in.Activations = append(in.Activations, filterInput().Activations...)
	before := jsonOf(t, in.Activations) + jsonOf(t, in.Snapshot) + jsonOf(t, in.Contracts) + jsonOf(t, in.DefaultContracts)
	tr := BuildTree(in)
	after := jsonOf(t, in.Activations) + jsonOf(t, in.Snapshot) + jsonOf(t, in.Contracts) + jsonOf(t, in.DefaultContracts)
	if before != after {
		t.Fatal("input modified")
	}
	// Overwrite every day of the tree; the input must not change.
	for _, rn := range tr.Knoten {
		for _, an := range rn.Knoten {
			for _, cn := range an.Knoten {
				for _, c := range cn.Zeitreihen {
					for _, p := range []*pipeline.Day{c.AktivAb, c.AktivBis, c.BenoetigtAb, c.DeaktiviertAb} {
						if p != nil {
							*p = pipeline.Day{}
						}
					}
				}
				if len(cn.Vertraege) > 0 {
					cn.Vertraege[0] = "X"
				}
			}
		}
	}
	after = jsonOf(t, in.Activations) + jsonOf(t, in.Snapshot) + jsonOf(t, in.Contracts) + jsonOf(t, in.DefaultContracts)
	if before != after {
		t.Fatal("tree aliases its input")
	}
}

// largeInput has dsos DSOs with 3 areas and 4 forecast groups each, and n
// activation records spread over their cells with mixed actions, sources
// and days.
func largeInput(dsos, n int) Input {
	in := baseInput()
	in.Contracts = map[pipeline.ControlArea][]string{
		pipeline.TenneT: {"BK1"}, pipeline.Amprion: {"BK1", "BK2"}, pipeline.FiftyHertz: {},
	}
	in.DefaultContracts = []string{"BKD"}
	in.Names = map[string]string{}
	prg := []Prognoseart{PrognoseSLP, PrognoseRLM, PrognoseTLPGemeinsam, PrognoseIMS}
	var es []Entry
	for d := range dsos {
		dso := fmt.Sprintf("99%011d", d)
		in.Names[dso] = "DSO " + dso
		zone := pipeline.ControlAreas[d%len(pipeline.ControlAreas)]
		for a := range 3 {
			area := fmt.Sprintf("11Y%s-%d", dso, a)
			for g, p := range prg {
				es = append(es, entry(dso, area, zone, p, (d+a+g)%30-15, 1+(d+g)%7))
			}
		}
	}
	in.Snapshot = snap(es...)
	rng := rand.New(rand.NewPCG(7, 11))
	types := []SeriesType{SLS, SLS, LGS, TLS, EGS}
	contracts := []string{"BK1", "BK2", "BKD", "BKX"}
	for i := range n {
		e := es[rng.IntN(len(es))]
		act := Aktivierung
		if rng.IntN(4) == 0 {
			act = Deaktivierung
		}
		src := SourceUTILMD
		if rng.IntN(3) == 0 {
			src = SourceImport
		}
		var bis *pipeline.Day
		if rng.IntN(3) == 0 {
			bis = dp(rng.IntN(40) - 20)
		}
		r := rec(act, rng.IntN(40)-25, bis, src, rng.IntN(5), fmt.Sprintf("TX%d", i))
		r.Marktrolle = Roles[rng.IntN(2)]
		r.NetzbetreiberMPID, r.Bilanzierungsgebiet = e.NetzbetreiberMPID, e.Bilanzierungsgebiet
		r.Bilanzkreis = contracts[rng.IntN(len(contracts))]
		r.Zeitreihentyp = types[rng.IntN(len(types))]
		in.Activations = append(in.Activations, r)
	}
	return in
}

// BenchmarkBuildTree: 900 DSOs x 3 areas x 4 groups, 20,000 records.
func BenchmarkBuildTree(b *testing.B) {
	in := largeInput(900, 20000)
	b.ReportAllocs()
	for b.Loop() {
		BuildTree(in)
	}
}
