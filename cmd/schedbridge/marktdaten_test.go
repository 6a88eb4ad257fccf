package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestMarktdatenCLI imports prices and activations from files, reads the
// calculation of a period and refuses bad input with exit code 2.
func TestMarktdatenCLI(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	prices, err := filepath.Abs("../../ingest/prices/testdata/smard_2026-10-25_qh.json")
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := in.cli(0, "prices", "import", "spot", prices)
	if !strings.Contains(out, `"quarter_hours": 100`) || !strings.Contains(errOut, "prices spot: 100 points") {
		t.Fatalf("spot import: %s / %s", out, errOut)
	}
	// The same file again writes nothing new.
	if out, _ := in.cli(0, "prices", "import", "spot", prices); !strings.Contains(out, `"quarter_hours": 0`) {
		t.Errorf("second import: %s", out)
	}
	// A CSV is not a spot price file: exit 1 with the reason.
	rebap, _ := filepath.Abs("../../ingest/prices/testdata/rebap_2026-10-25_utc.csv")
	if _, errOut := in.cli(2, "prices", "import", "spot", rebap); !strings.Contains(errOut, "SMARD") {
		t.Errorf("CSV as spot: %s", errOut)
	}
	in.cli(2, "prices", "import", "intraday")

	acts, _ := filepath.Abs("../../ingest/marketdata/testdata/zeitreihen/aktivierungen.csv")
	if out, _ := in.cli(0, "zeitreihen", "aktivierungen", acts); !strings.Contains(out, `"geaendert": true`) {
		t.Errorf("activations: %s", out)
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("marktrolle;netzbetreiber_mp_id\nNB;1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in.cli(2, "zeitreihen", "aktivierungen", bad)

	out, _ = in.cli(0, "kalkulation", "--von", "2026-10-24", "--bis", "2026-10-26")
	if !strings.Contains(out, `"mengenbasis": "keine"`) || !strings.Contains(out, `"von": "2026-10-24"`) {
		t.Errorf("kalkulation: %s", out)
	}
	in.cli(2, "kalkulation", "--von", "2026-10-01", "--bis", "2026-11-15")
}
