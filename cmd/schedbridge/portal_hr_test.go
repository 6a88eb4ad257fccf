package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

const hrTestIssuer = "https://idp.example.de/realms/staff"

// hrListed is what `portal employee list --json` prints per employee.
type hrListed struct {
	ID               string  `json:"id"`
	Name             string  `json:"name"`
	Email            string  `json:"email"`
	Department       string  `json:"department"`
	EntryDate        string  `json:"entry_date"`
	State            string  `json:"state"`
	WeeklyHours      float64 `json:"weekly_hours"`
	LeaveDaysPerYear int     `json:"leave_days_per_year"`
	User             *struct {
		Roles      []string `json:"roles"`
		MagicLink  bool     `json:"magic_link"`
		SSOIssuer  string   `json:"sso_issuer"`
		SSOSubject string   `json:"sso_subject"`
	} `json:"user"`
	Compensation []struct {
		Name        string `json:"name"`
		AmountCents int64  `json:"amount_cents"`
		Interval    string `json:"interval"`
		Visibility  string `json:"visibility"`
	} `json:"compensation"`
}

// hrEmployees runs `portal employee list --json` and returns its raw output
// and the employees by id.
func (in *instance) hrEmployees() (string, map[string]hrListed) {
	in.t.Helper()
	out, _ := in.cli(0, "portal", "employee", "list", "--json")
	var items []hrListed
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		in.t.Fatalf("list --json: %v\n%s", err, out)
	}
	byID := map[string]hrListed{}
	for _, it := range items {
		byID[it.ID] = it
	}
	return out, byID
}

func writeHRFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPortalHRCLI loads the portal as HR does, on both backends: one
// employee by flags, the sample files, and bad input that must change
// nothing.
func TestPortalHRCLI(t *testing.T) {
	employeesCSV, _ := filepath.Abs("../../ingest/hr/testdata/hr/mitarbeiter.csv")
	compensationCSV, _ := filepath.Abs("../../ingest/hr/testdata/hr/verguetung.csv")
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			in := newInstance(t, d)
			in.env = append(in.env, "SCHEDBRIDGE_PORTAL_OIDC_ISSUER="+hrTestIssuer, "SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID=portal")

			_, errOut := in.cli(0, "portal", "employee", "put", "1001", "--name", "Anna Müller", "--email", "Anna@Example.de",
				"--department", "Handel", "--entry-date", "01.04.2019", "--state", "be", "--weekly-hours", "39,5",
				"--sso-subject", "sub-anna", "--roles", "mitarbeiter,hr",
				"--component", "Grundgehalt=5.200,00:monatlich:sichtbar", "--component", "Bonus=1000.5:einmalig")
			if !strings.Contains(errOut, "employee 1001 created") || !strings.Contains(errOut, "2 components") {
				t.Errorf("put: %s", errOut)
			}
			_, emps := in.hrEmployees()
			a := emps["1001"]
			if a.Name != "Anna Müller" || a.Email != "anna@example.de" || a.EntryDate != "2019-04-01" || a.State != "BE" ||
				a.WeeklyHours != 39.5 || a.LeaveDaysPerYear != 30 || a.Department != "Handel" {
				t.Errorf("hrListed employee: %+v", a)
			}
			if a.User == nil || a.User.SSOIssuer != hrTestIssuer || a.User.SSOSubject != "sub-anna" || a.User.MagicLink ||
				!reflect.DeepEqual(a.User.Roles, []string{"mitarbeiter", "hr"}) {
				t.Errorf("hrListed user: %+v", a.User)
			}
			if len(a.Compensation) != 2 || a.Compensation[0].AmountCents != 520000 || a.Compensation[0].Visibility != "sichtbar" ||
				a.Compensation[1].Name != "Bonus" || a.Compensation[1].AmountCents != 100050 || a.Compensation[1].Interval != "einmalig" ||
				a.Compensation[1].Visibility != "maskiert" {
				t.Errorf("hrListed compensation: %+v", a.Compensation)
			}
			// A put without --component keeps the compensation.
			if _, errOut := in.cli(0, "portal", "employee", "put", "1001", "--name", "Anna Müller", "--email", "anna@example.de"); !strings.Contains(errOut, "employee 1001 updated") {
				t.Errorf("second put: %s", errOut)
			}
			if _, emps := in.hrEmployees(); len(emps["1001"].Compensation) != 2 || emps["1001"].WeeklyHours != 0 {
				t.Errorf("after the second put: %+v", emps["1001"])
			}
			// Bad flags are all reported, with exit 2, and write nothing.
			before, _ := in.hrEmployees()
			_, errOut = in.cli(2, "portal", "employee", "put", "1003", "--name", "X", "--email", "x", "--weekly-hours", "61",
				"--component", "Basis=5.200:monatlich")
			for _, want := range []string{`--email: "x" is not an e-mail address`, "--weekly-hours: 61 hours", `--component "Basis=5.200:monatlich"`} {
				if !strings.Contains(errOut, want) {
					t.Errorf("bad put: %q lacks %q", errOut, want)
				}
			}
			if after, _ := in.hrEmployees(); after != before {
				t.Errorf("a refused put changed the employees:\nbefore %s\nafter  %s", before, after)
			}

			_, errOut = in.cli(0, "portal", "employee", "import", employeesCSV)
			if !strings.Contains(errOut, "3 rows, 2 employees created, 1 updated") {
				t.Errorf("employee import: %s", errOut)
			}
			_, errOut = in.cli(0, "portal", "compensation", "import", compensationCSV)
			if !strings.Contains(errOut, "6 rows for 3 employees, 2 compensation sets created, 1 replaced") {
				t.Errorf("compensation import: %s", errOut)
			}
			before, emps = in.hrEmployees()
			if len(emps) != 3 || emps["1001"].Email != "anna.mueller@example.de" || emps["1001"].User.SSOSubject != "8f1c2a7e-anna" ||
				len(emps["1001"].Compensation) != 3 || emps["1001"].Compensation[2].AmountCents != -15000 ||
				emps["A-17"].Name != "Çelik, Deniz" || emps["1002"].Compensation[0].Visibility != "maskiert" {
				t.Errorf("after the imports: %s", before)
			}

			// A bad file changes nothing, not even its good rows.
			bad := writeHRFile(t, "bad.csv", "personalnummer;name;email;wochenstunden\n2001;Neu;neu@x.de;40\n1001;Anna;anna.mueller@example.de;viel\n")
			if _, errOut := in.cli(2, "portal", "employee", "import", bad); !strings.Contains(errOut, `line 3, column wochenstunden: "viel"`) {
				t.Errorf("bad employee file: %s", errOut)
			}
			// Compensation for an unknown employee changes nothing either.
			unknown := writeHRFile(t, "comp.csv", "personalnummer;bestandteil;betrag;turnus\n1001;Grundgehalt;1;monatlich\n9999;Grundgehalt;1;monatlich\n")
			if _, errOut := in.cli(2, "portal", "compensation", "import", unknown); !strings.Contains(errOut, "no employee record for personalnummer 9999") {
				t.Errorf("unknown employee: %s", errOut)
			}
			badComp := writeHRFile(t, "comp2.csv", "personalnummer;bestandteil;betrag;turnus\n1001;Grundgehalt;1;monatlich\n1002;Grundgehalt;5.200;monatlich\n")
			if _, errOut := in.cli(2, "portal", "compensation", "import", badComp); !strings.Contains(errOut, "line 3, column betrag") {
				t.Errorf("bad compensation file: %s", errOut)
			}
			if after, _ := in.hrEmployees(); after != before {
				t.Errorf("rejected files changed the employees:\n%s\n%s", before, after)
			}

			// Applicants are users without an employee record.
			if _, errOut := in.cli(0, "portal", "user", "put", "--email", "Bea@Example.de", "--name", "Bea Bewerberin"); !strings.Contains(errOut, "user bea@example.de created") {
				t.Errorf("user put: %s", errOut)
			}
			in.cli(0, "portal", "user", "put", "--email", "bea@example.de", "--name", "Bea B.", "--roles", "bewerber,neu", "--magic-link=false")
			if _, errOut := in.cli(2, "portal", "user", "put", "--email", "bernd.schulz@example.de", "--name", "B"); !strings.Contains(errOut, "signs in for employee 1002") {
				t.Errorf("user put on an employee's user: %s", errOut)
			}
			in.cli(2, "portal", "user", "put", "--name", "No Address")

			db, err := sqldb.Open(context.Background(), sqldb.Options{URL: in.dbURL})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			u, err := db.UserByEmail(context.Background(), "bea@example.de")
			if err != nil || u.Name != "Bea B." || u.EmployeeID != "" || u.MagicLink || !reflect.DeepEqual(u.Roles, []string{"bewerber", "neu"}) {
				t.Errorf("applicant: %+v %v", u, err)
			}

			// Certificate states.
			c, err := db.CreateCertificate(context.Background(), portal.Certificate{EmployeeID: "1002", Type: portal.Zwischenzeugnis,
				Language: "de", CreatedAt: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			id := fmt.Sprint(c.ID)
			if _, errOut := in.cli(0, "portal", "certificate", "status", id, "ausgestellt"); !strings.Contains(errOut, "is ausgestellt") {
				t.Errorf("certificate status: %s", errOut)
			}
			if got, err := db.Certificate(context.Background(), "1002", c.ID); err != nil || got.Status != portal.CertIssued {
				t.Errorf("stored certificate: %+v %v", got, err)
			}
			if _, errOut := in.cli(2, "portal", "certificate", "status", "424242", "abgelehnt"); !strings.Contains(errOut, "certificate 424242 not found") {
				t.Errorf("unknown certificate: %s", errOut)
			}
			if _, errOut := in.cli(2, "portal", "certificate", "status", id, "fertig"); !strings.Contains(errOut, "beantragt, in_bearbeitung, ausgestellt, abgelehnt") {
				t.Errorf("unknown status: %s", errOut)
			}
			in.cli(2, "portal", "certificate", "status", "abc", "ausgestellt")
		})
	}
}

// TestPortalHRNoIssuer checks that an SSO subject is refused while no
// identity provider is configured: it could never be matched at sign-in.
func TestPortalHRNoIssuer(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	in.env = append(in.env, "SCHEDBRIDGE_PORTAL_OIDC_ISSUER=")
	_, errOut := in.cli(2, "portal", "employee", "put", "1", "--name", "A", "--email", "a@x.de", "--sso-subject", "s")
	if !strings.Contains(errOut, "portal.oidc.issuer") {
		t.Errorf("put: %s", errOut)
	}
	employeesCSV, _ := filepath.Abs("../../ingest/hr/testdata/hr/mitarbeiter.csv")
	if _, errOut := in.cli(2, "portal", "employee", "import", employeesCSV); !strings.Contains(errOut, "sso_subject of personalnummer 1001 needs") {
		t.Errorf("import: %s", errOut)
	}
	if out, emps := in.hrEmployees(); len(emps) != 0 {
		t.Errorf("employees written: %s", out)
	}
	in.cli(0, "portal", "employee", "put", "1", "--name", "A", "--email", "a@x.de", "--magic-link")
}

// TestPortalHRProgress imports a file of more than a thousand rows and
// checks the progress and summary lines.
func TestPortalHRProgress(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	var emps, comps strings.Builder
	emps.WriteString("personalnummer,name,email\n")
	comps.WriteString("personalnummer,bestandteil,betrag,turnus,sichtbarkeit\n")
	const n = 1200
	for i := range n {
		fmt.Fprintf(&emps, "P%d,Name %d,p%d@example.de\n", i, i, i)
		fmt.Fprintf(&comps, "P%d,Basis,%d.50,monatlich,sichtbar\n", i, i)
	}
	// stderr is no terminal here: the progress is log records, the first
	// row's and the last one's at least.
	_, errOut := in.cli(0, "portal", "employee", "import", writeHRFile(t, "e.csv", emps.String()))
	if !strings.Contains(errOut, `"msg":"progress","task":"portal employee import","done":1,"total":1200`) ||
		!strings.Contains(errOut, `"msg":"progress","task":"portal employee import","done":1200,"total":1200`) ||
		!strings.Contains(errOut, "1200 rows, 1200 employees created, 0 updated") {
		t.Errorf("employee import: %s", errOut)
	}
	_, errOut = in.cli(0, "portal", "compensation", "import", writeHRFile(t, "c.csv", comps.String()))
	if !strings.Contains(errOut, `"msg":"progress","task":"portal compensation import","done":1200,"total":1200`) ||
		!strings.Contains(errOut, "1200 compensation sets created") {
		t.Errorf("compensation import: %s", errOut)
	}
	_, got := in.hrEmployees()
	if len(got) != n || got["P1199"].Compensation[0].AmountCents != 119950 {
		t.Errorf("%d employees, P1199: %+v", len(got), got["P1199"])
	}
}
