package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// listedOperator is what `operator list --json` prints per operator.
type listedOperator struct {
	Email   string `json:"email"`
	AddedAt string `json:"added_at"`
	AddedBy string `json:"added_by"`
}

// operators runs `operator list --json` and returns the operators.
func (in *instance) operators() []listedOperator {
	in.t.Helper()
	out, _ := in.cli(0, "operator", "list", "--json")
	var ops []listedOperator
	if err := json.Unmarshal([]byte(out), &ops); err != nil {
		in.t.Fatalf("operator list --json: %v\n%s", err, out)
	}
	return ops
}

// TestOperatorCLI keeps the console's operator list with the built binary
// on both backends. Help and a refused address touch no database; adding
// twice keeps the first entry; removing an unknown address fails like the
// other commands' unknown ids; after every step the list is read back whole.
func TestOperatorCLI(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			in := newInstance(t, d)
			dbFile := filepath.Join(envValue(in.env, "SCHEDBRIDGE_DATA_DIR"), sqldb.DefaultSQLiteFile)
			for _, args := range [][]string{{"operator", "add", "--help"}, {"operator", "remove", "-h"}, {"operator", "list", "--help"}} {
				out, errOut := in.cli(0, args...)
				if !strings.HasPrefix(out, "Usage: schedbridge "+strings.Join(args[:2], " ")) || errOut != "" {
					t.Errorf("%v: stdout %q stderr %q", args, out, errOut)
				}
			}
			for _, bad := range []string{"anna", "Anna <anna@firma.de>", "anna@firma.de\r\nBcc: x@y.de", ""} {
				if _, errOut := in.cli(2, "operator", "add", bad); !strings.Contains(errOut, "is not an e-mail address") {
					t.Errorf("add %q: %s", bad, errOut)
				}
			}
			if _, err := os.Stat(dbFile); d == sqldb.SQLite && !os.IsNotExist(err) {
				t.Errorf("help or a refused address created the database: %v", err)
			}

			steps := []struct {
				args   []string
				code   int
				stderr string   // a fragment of what the command says
				want   []string // the listed addresses afterwards, in order
			}{
				{[]string{"add", "Anna.Schmidt@Firma.DE"}, 0, "operator anna.schmidt@firma.de added", []string{"anna.schmidt@firma.de"}},
				{[]string{"add", "anna.schmidt@firma.de"}, 0, "anna.schmidt@firma.de already was an operator; nothing changed", []string{"anna.schmidt@firma.de"}},
				{[]string{"add", "zoe@firma.de"}, 0, "operator zoe@firma.de added", []string{"anna.schmidt@firma.de", "zoe@firma.de"}},
				{[]string{"add", "bob@firma.de"}, 0, "operator bob@firma.de added", []string{"anna.schmidt@firma.de", "bob@firma.de", "zoe@firma.de"}},
				{[]string{"add", "carl"}, 2, `"carl" is not an e-mail address`, []string{"anna.schmidt@firma.de", "bob@firma.de", "zoe@firma.de"}},
				{[]string{"remove", "carl@firma.de"}, 2, "carl@firma.de is not an operator", []string{"anna.schmidt@firma.de", "bob@firma.de", "zoe@firma.de"}},
				{[]string{"remove", "carl"}, 2, `"carl" is not an e-mail address`, []string{"anna.schmidt@firma.de", "bob@firma.de", "zoe@firma.de"}},
				{[]string{"remove", "Zoe@Firma.de"}, 0, "operator zoe@firma.de removed", []string{"anna.schmidt@firma.de", "bob@firma.de"}},
			}
			var first []listedOperator
			for _, s := range steps {
				_, errOut := in.cli(s.code, append([]string{"operator"}, s.args...)...)
				if !strings.Contains(errOut, s.stderr) {
					t.Errorf("%v: stderr %q, want %q", s.args, errOut, s.stderr)
				}
				ops := in.operators()
				var got []string
				for _, o := range ops {
					got = append(got, o.Email)
					if o.AddedBy != "cli" || o.AddedAt == "" {
						t.Errorf("%v: listed %+v", s.args, o)
					}
				}
				if strings.Join(got, " ") != strings.Join(s.want, " ") {
					t.Errorf("%v: operators %v, want %v", s.args, got, s.want)
				}
				// The second add changed nothing: the first entry stays as
				// it was, its time included.
				if first == nil {
					first = ops
				} else if ops[0] != first[0] {
					t.Errorf("%v: first entry %+v, was %+v", s.args, ops[0], first[0])
				}
			}

			// The table has a header and one line per operator, as key list.
			out, _ := in.cli(0, "operator", "list")
			row := regexp.MustCompile(`^(\S+@\S+)\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+cli$`)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 3 || !regexp.MustCompile(`^EMAIL\s+ADDED\s+ADDED BY$`).MatchString(lines[0]) {
				t.Fatalf("operator list:\n%s", out)
			}
			for i, want := range []string{"anna.schmidt@firma.de", "bob@firma.de"} {
				if m := row.FindStringSubmatch(lines[i+1]); m == nil || m[1] != want {
					t.Errorf("operator list line %d = %q, want %s", i+1, lines[i+1], want)
				}
			}
		})
	}
}
