package sqldb_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

func snapshot(quelle string, n int) zeitreihen.Snapshot {
	s := zeitreihen.Snapshot{Quelle: quelle, Stand: t0.Add(-time.Hour).Add(123456 * time.Microsecond)}
	for i := range n {
		e := zeitreihen.Entry{NetzbetreiberMPID: "9900000000010", Bilanzierungsgebiet: "11YN-BG-A", Regelzone: pipeline.TenneT,
			Lieferbeginn: pipeline.NewDay(2026, time.December, 1+i), Anzahl: 10 + i}
		if i%2 == 0 {
			e.Netzbetreiber, e.Prognoseart, e.Zaehlertyp = "Netz Nord", zeitreihen.PrognoseSLP, "MODERNE_MESSEINRICHTUNG"
		}
		s.Eintraege = append(s.Eintraege, e)
	}
	return s
}

// TestHochlaufSnapshots: a snapshot with another hash replaces the current
// one and keeps it as history; one with the current hash writes nothing.
func TestHochlaufSnapshots(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if _, err := db.CurrentSnapshot(ctx); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("before any: %v", err)
		}
		if list, err := db.Snapshots(ctx, 0); err != nil || len(list) != 0 {
			t.Errorf("history before any = %v, %v", list, err)
		}
		s1 := snapshot("crm-export", 3)
		first, replaced, err := db.PutSnapshot(ctx, s1, "h1", "key_a", t0)
		if err != nil || !replaced || first.ID == 0 || first.Hash != "h1" || first.KeyID != "key_a" ||
			!first.ReceivedAt.Equal(t0) || first.Superseded != nil || !reflect.DeepEqual(first.Snapshot, s1) {
			t.Fatalf("first = %+v %v, %v", first, replaced, err)
		}
		cur, err := db.CurrentSnapshot(ctx)
		if err != nil || !reflect.DeepEqual(cur, first) {
			t.Errorf("current = %+v, %v\nwant %+v", cur, err, first)
		}

		again, replaced, err := db.PutSnapshot(ctx, s1, "h1", "key_b", t0.Add(time.Hour))
		if err != nil || replaced || !reflect.DeepEqual(again, first) {
			t.Errorf("identical = %+v %v, %v; want the first unchanged", again, replaced, err)
		}

		s2 := snapshot("crm-export", 1)
		second, replaced, err := db.PutSnapshot(ctx, s2, "h2", "", t0.Add(2*time.Hour))
		if err != nil || !replaced || second.ID <= first.ID {
			t.Fatalf("second = %+v %v, %v", second, replaced, err)
		}
		if cur, err := db.CurrentSnapshot(ctx); err != nil || cur.ID != second.ID || !reflect.DeepEqual(cur.Eintraege, s2.Eintraege) {
			t.Errorf("current after second = %+v, %v", cur, err)
		}
		// Back to the first content is a new snapshot: only the current
		// one is compared.
		third, replaced, err := db.PutSnapshot(ctx, s1, "h1", "key_a", t0.Add(3*time.Hour))
		if err != nil || !replaced || third.ID <= second.ID {
			t.Fatalf("third = %+v %v, %v", third, replaced, err)
		}

		hist, err := db.Snapshots(ctx, 0)
		if err != nil || len(hist) != 3 {
			t.Fatalf("history = %+v, %v", hist, err)
		}
		for i, c := range []struct {
			id         int64
			hash       string
			superseded time.Duration // after t0; 0 = current
		}{{third.ID, "h1", 0}, {second.ID, "h2", 3 * time.Hour}, {first.ID, "h1", 2 * time.Hour}} {
			h := hist[i]
			if h.ID != c.id || h.Hash != c.hash || h.Eintraege != nil || h.Quelle != "crm-export" || !h.Stand.Equal(s1.Stand) {
				t.Errorf("history[%d] = %+v", i, h)
			}
			if (c.superseded == 0) != (h.Superseded == nil) || (h.Superseded != nil && !h.Superseded.Equal(t0.Add(c.superseded))) {
				t.Errorf("history[%d] superseded at %v, want t0+%s", i, h.Superseded, c.superseded)
			}
		}
		if hist, err := db.Snapshots(ctx, 1); err != nil || len(hist) != 1 || hist[0].ID != third.ID {
			t.Errorf("history limit 1 = %+v, %v", hist, err)
		}

		// An empty snapshot is a snapshot: every customer is gone.
		empty, replaced, err := db.PutSnapshot(ctx, zeitreihen.Snapshot{Quelle: "crm-export", Stand: t0}, "h0", "", t0.Add(4*time.Hour))
		if err != nil || !replaced || len(empty.Eintraege) != 0 {
			t.Errorf("empty = %+v %v, %v", empty, replaced, err)
		}
		if cur, err := db.CurrentSnapshot(ctx); err != nil || cur.Eintraege == nil || len(cur.Eintraege) != 0 {
			t.Errorf("empty current = %+v, %v", cur, err)
		}

		for _, c := range []struct {
			name string
			hash string
			now  time.Time
		}{{"no hash", "", t0}, {"no time", "h9", time.Time{}}} {
			if _, _, err := db.PutSnapshot(ctx, s1, c.hash, "", c.now); pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("%s: %v", c.name, err)
			}
		}
		// The unique index, not only the code, allows one current snapshot.
		if err := sqldb.Exec(ctx, db, "INSERT INTO hochlauf_snapshots (quelle, stand, hash, key_id, entries, received_at) "+
			"VALUES ('x', ?, 'hx', '', '[]', ?)", t0, t0); err == nil {
			t.Error("a second current snapshot was accepted by the schema")
		}
	})
}

// TestHochlaufSnapshotsConcurrent: writers at once queue; each different
// snapshot replaces the one before it, identical ones are stored once, and
// there is never more than one current snapshot.
func TestHochlaufSnapshotsConcurrent(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		const writers = 6
		put := func(hash func(i int) string) (replaced int) {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, r, err := db.PutSnapshot(ctx, snapshot(fmt.Sprint("w", i), i+1), hash(i), "", t0.Add(time.Duration(i)*time.Second))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if r {
						replaced++
					}
				}()
			}
			wg.Wait()
			return replaced
		}
		if n := put(func(i int) string { return fmt.Sprint("d", i) }); n != writers {
			t.Errorf("different snapshots: %d replaced, want %d", n, writers)
		}
		if n := put(func(int) string { return "same" }); n != 1 {
			t.Errorf("identical snapshots: %d replaced, want 1", n)
		}
		hist, err := db.Snapshots(ctx, 0)
		if err != nil || len(hist) != writers+1 {
			t.Fatalf("history = %d, %v", len(hist), err)
		}
		current := 0
		for _, h := range hist {
			if h.Superseded == nil {
				current++
			}
		}
		cur, err := db.CurrentSnapshot(ctx)
		if current != 1 || err != nil || cur.ID != hist[0].ID || cur.Hash != "same" {
			t.Errorf("%d current snapshots; current = %d %s, %v", current, cur.ID, cur.Hash, err)
		}
	})
}

func activation(typ zeitreihen.SeriesType, ab pipeline.Day, bis *pipeline.Day, ref string) zeitreihen.Activation {
	return zeitreihen.Activation{Marktrolle: zeitreihen.RoleBKV, NetzbetreiberMPID: "9900000000010", Bilanzierungsgebiet: "11YN-BG-A",
		Bilanzkreis: "11XSCHEDBRIDGE-1", Zeitreihentyp: typ, Aktion: zeitreihen.Aktivierung, GueltigAb: ab, GueltigBis: bis, Referenz: ref}
}

// TestActivations: a set is replaced per source and key as a whole; an equal
// set in another order is no change; an empty set deletes.
func TestActivations(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		jan, dec := pipeline.NewDay(2026, time.January, 1), pipeline.NewDay(2026, time.December, 31)
		a := activation(zeitreihen.SLS, jan, nil, "")
		b := activation(zeitreihen.LGS, jan, &dec, "TX-1")
		c := activation(zeitreihen.TLS, dec, nil, "TX-2")
		c.Marktrolle, c.Aktion = zeitreihen.RoleLF, zeitreihen.Deaktivierung
		const file = "inbox/edifact/utilmd-1.edi"

		steps := []struct {
			name    string
			src     zeitreihen.Source
			key     string
			recs    []zeitreihen.Activation
			changed bool
			want    []string // every stored record: source/key/type@received (hours after t0)
		}{
			{"first import", zeitreihen.SourceImport, "import", []zeitreihen.Activation{a, b}, true,
				[]string{"import/import/SLS@0", "import/import/LGS@0"}},
			{"same set, other order", zeitreihen.SourceImport, "import", []zeitreihen.Activation{b, a}, false,
				[]string{"import/import/SLS@0", "import/import/LGS@0"}},
			{"a file's set", zeitreihen.SourceUTILMD, file, []zeitreihen.Activation{c}, true,
				[]string{"import/import/SLS@0", "import/import/LGS@0", "utilmd/" + file + "/TLS@2"}},
			{"import changes", zeitreihen.SourceImport, "import", []zeitreihen.Activation{b}, true,
				[]string{"utilmd/" + file + "/TLS@2", "import/import/LGS@3"}},
			{"a duplicate is a change", zeitreihen.SourceImport, "import", []zeitreihen.Activation{b, b}, true,
				[]string{"utilmd/" + file + "/TLS@2", "import/import/LGS@4", "import/import/LGS@4"}},
			{"the file emptied", zeitreihen.SourceUTILMD, file, nil, true,
				[]string{"import/import/LGS@4", "import/import/LGS@4"}},
			{"empty again", zeitreihen.SourceUTILMD, file, nil, false,
				[]string{"import/import/LGS@4", "import/import/LGS@4"}},
		}
		for i, s := range steps {
			changed, err := db.ReplaceActivations(ctx, s.src, s.key, s.recs, t0.Add(time.Duration(i)*time.Hour))
			if err != nil || changed != s.changed {
				t.Fatalf("%s: changed %v, %v; want %v", s.name, changed, err, s.changed)
			}
			all, err := db.Activations(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range all {
				got = append(got, fmt.Sprintf("%s/%s/%s@%d", r.Quelle, r.SourceKey, r.Zeitreihentyp, int(r.ReceivedAt.Sub(t0).Hours())))
			}
			if fmt.Sprint(got) != fmt.Sprint(s.want) {
				t.Errorf("%s: stored %v\nwant %v", s.name, got, s.want)
			}
		}

		// Every field survives the round trip, with and without an end day.
		if _, err := db.ReplaceActivations(ctx, zeitreihen.SourceUTILMD, file, []zeitreihen.Activation{c, b}, t0); err != nil {
			t.Fatal(err)
		}
		all, _ := db.Activations(ctx)
		got := []zeitreihen.Activation{all[2].Activation, all[3].Activation}
		if want := []zeitreihen.Activation{c, b}; !reflect.DeepEqual(got, want) {
			t.Errorf("round trip = %+v\nwant %+v", got, want)
		}
		// A changed reference alone is a change.
		b2 := b
		b2.Referenz = "TX-9"
		if changed, err := db.ReplaceActivations(ctx, zeitreihen.SourceUTILMD, file, []zeitreihen.Activation{c, b2}, t0); err != nil || !changed {
			t.Errorf("changed reference: %v, %v", changed, err)
		}

		for _, c := range []struct {
			name string
			src  zeitreihen.Source
			key  string
			recs []zeitreihen.Activation
		}{
			{"unknown source", "csv", "x", nil},
			{"no key", zeitreihen.SourceImport, "", nil},
			{"no start day", zeitreihen.SourceImport, "import", []zeitreihen.Activation{{Marktrolle: zeitreihen.RoleBKV}}},
		} {
			if _, err := db.ReplaceActivations(ctx, c.src, c.key, c.recs, t0); pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("%s: %v", c.name, err)
			}
		}
		if all, _ := db.Activations(ctx); len(all) != 4 {
			t.Errorf("invalid calls changed the store: %d records", len(all))
		}
	})
}
