package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestMakoCLI drives the market communication through the binary on the
// embedded default: registry, a send without and with our identity, a sync
// that indexes a dropped answer, and the overview.
func TestMakoCLI(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	dir := t.TempDir()
	reg := filepath.Join(dir, "dsos.csv")
	if err := os.WriteFile(reg, []byte("mp_id;name;regelzone;email\n9900000000011;Netz Aachen;Amprion;mako@netz-a.de\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := in.cli(0, "mako", "registry", reg)
	if !strings.Contains(out, `"partners": 1`) {
		t.Fatalf("registry: %s", out)
	}
	// Without our identity the send is refused with the keys to configure.
	_, errOut := in.cli(1, "mako", "send", "9900000000011", "partin_out")
	if !strings.Contains(errOut, "mako.self.street") {
		t.Fatalf("send without identity: %s", errOut)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(`mako:
  self:
    mp_id: "9900000000000"
    name: Beispiel Energie GmbH
    street: Musterweg 1
    postal_code: "10115"
    city: Berlin
    email: mako@beispiel-energie.de
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = in.cli(0, "--config", cfg, "mako", "send", "9900000000011", "partin_out")
	var sent struct {
		Key            string `json:"key"`
		InterchangeRef string `json:"interchange_ref"`
	}
	if err := json.Unmarshal([]byte(out), &sent); err != nil || !strings.HasPrefix(sent.Key, "outbox/edifact/") {
		t.Fatalf("send: %s %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(in.dataDir(), "bucket", sent.Key)); err != nil {
		t.Fatalf("the interchange is not in the local store: %v", err)
	}
	// The DSO rejects it; the sync picks the CONTRL up and the row turns red.
	contrl := "UNA:+.? 'UNB+UNOC:3+9900000000011:500+9900000000000:500+261123:0900+C1'UNH+1+CONTRL:D:3:UN:2.0b'" +
		"UCI+" + sent.InterchangeRef + "+9900000000000:500+9900000000011:500+4'UNT+3+1'UNZ+1+C1'"
	drop := filepath.Join(in.dataDir(), "bucket", "inbox", "edifact", "c1.edi")
	if err := os.MkdirAll(filepath.Dir(drop), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(drop, []byte(contrl), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut = in.cli(0, "mako", "sync")
	if !strings.Contains(errOut, "mako sync: 1 EDIFACT files (0 unparseable)") {
		t.Fatalf("sync progress: %s", errOut)
	}
	out, _ = in.cli(0, "mako", "overview", "--ordnung", "kontakt")
	if !strings.Contains(out, `"status": "red"`) || !strings.Contains(out, `"state": "abgelehnt"`) {
		t.Fatalf("overview after the rejection: %s", out)
	}
	in.cli(2, "mako", "overview", "--tage", "0")
}

// dataDir is the instance's SCHEDBRIDGE_DATA_DIR.
func (in *instance) dataDir() string {
	for _, e := range in.env {
		if v, ok := strings.CutPrefix(e, "SCHEDBRIDGE_DATA_DIR="); ok {
			return v
		}
	}
	in.t.Fatal("no data dir")
	return ""
}
