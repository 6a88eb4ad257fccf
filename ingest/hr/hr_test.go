package hr

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
)

const hrHeader = "personalnummer;name;email"

// hrProblems renders an HR file's problems as "line 3, column email: msg"
// lines, or fails when err is not an *HRFileError of kind Invalid.
func hrProblems(t *testing.T, err error) []string {
	t.Helper()
	var fe *HRFileError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v (%T), want *HRFileError", err, err)
	}
	if pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("kind = %s, want invalid", pipeline.KindOf(err))
	}
	out := make([]string, len(fe.Problems))
	for i, p := range fe.Problems {
		out[i] = strings.Join(p.Loc, ", column ") + ": " + p.Msg
	}
	return out
}

// checkHRProblems asserts that got has one problem per want entry, in order,
// each starting with its "line N, column C" and containing the rest after
// " | ".
func checkHRProblems(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		loc, text, _ := strings.Cut(w, " | ")
		if !strings.HasPrefix(got[i], loc+": ") || !strings.Contains(got[i], text) {
			t.Errorf("problem %d = %q, want %q ... %q", i, got[i], loc, text)
		}
	}
}

func TestHRSampleEmployees(t *testing.T) {
	f, err := os.Open("testdata/hr/mitarbeiter.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := DecodeEmployeesCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []HREmployee{
		{
			Employee: portal.Employee{ID: "1001", Name: "Anna Müller", Email: "anna.mueller@example.de", Department: "Energiehandel",
				Position: "Händlerin", EntryDate: pipeline.NewDay(2019, 4, 1), State: "BE", WeeklyHours: 39.5, LeaveDaysPerYear: 30},
			Link: portal.User{Email: "anna.mueller@example.de", Name: "Anna Müller", Roles: []string{"mitarbeiter"}, SSOSubject: "8f1c2a7e-anna"},
		},
		{
			Employee: portal.Employee{ID: "1002", Name: "Bernd Schulz", Email: "bernd.schulz@example.de", Department: "Bilanzkreismanagement",
				Position: "Analyst", EntryDate: pipeline.NewDay(2021, 10, 1), State: "BY", WeeklyHours: 40, LeaveDaysPerYear: DefaultLeaveDays},
			Link: portal.User{Email: "bernd.schulz@example.de", Name: "Bernd Schulz", Roles: []string{"mitarbeiter", "hr"}, MagicLink: true},
		},
		{
			Employee: portal.Employee{ID: "A-17", Name: "Çelik, Deniz", Email: "deniz.celik@example.de", Department: "Personal",
				Position: "Referentin", EntryDate: pipeline.NewDay(2024, 1, 15), WeeklyHours: 20, LeaveDaysPerYear: 15},
			Link: portal.User{Email: "deniz.celik@example.de", Name: "Çelik, Deniz", Roles: []string{portal.RoleEmployee}, MagicLink: true},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestHRSampleCompensation(t *testing.T) {
	f, err := os.Open("testdata/hr/verguetung.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	comps, ids, err := DecodeCompensationCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1001", "1002", "A-17"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids = %v, want %v", ids, want)
	}
	want := map[string][]portal.Component{
		"1001": {
			{Name: "Grundgehalt", AmountCents: 520000, Interval: portal.Monthly, Visibility: portal.Visible},
			{Name: "Weihnachtsgeld", AmountCents: 260000, Interval: portal.Yearly, Visibility: portal.Masked},
			{Name: "Entgeltumwandlung", AmountCents: -15000, Interval: portal.Monthly, Visibility: portal.Visible},
		},
		"1002": {{Name: "Grundgehalt", AmountCents: 480050, Interval: portal.Monthly, Visibility: portal.Masked}},
		"A-17": {
			{Name: "Grundgehalt", AmountCents: 235075, Interval: portal.Monthly, Visibility: portal.Visible},
			{Name: "Inflationsausgleich", AmountCents: 150000, Interval: portal.Once, Visibility: portal.Visible},
		},
	}
	if !reflect.DeepEqual(comps, want) {
		t.Errorf("got\n%+v\nwant\n%+v", comps, want)
	}
}

// TestHREmployeesCSVValid covers the accepted spellings: the comma
// separator with a quoted role list, the defaults of empty cells, columns
// in another order and case, trailing separators and blank rows.
func TestHREmployeesCSVValid(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []HREmployee
	}{
		{"header only", hrHeader + "\n", []HREmployee{}},
		{"defaults", hrHeader + "\n7;Eva Ost;EVA@Example.DE\n", []HREmployee{{
			Employee: portal.Employee{ID: "7", Name: "Eva Ost", Email: "eva@example.de", LeaveDaysPerYear: 30},
			Link:     portal.User{Email: "eva@example.de", Name: "Eva Ost", Roles: []string{"mitarbeiter"}},
		}}},
		{"comma separator, quoted list, other order", "EMAIL,Rollen,Personalnummer,name,wochenstunden,magic_link,bundesland\n" +
			"a@b.de,\"HR, mitarbeiter,hr\",x.1,\"Ost, Eva\",38.75,true,de-nw\n",
			[]HREmployee{{
				Employee: portal.Employee{ID: "x.1", Name: "Ost, Eva", Email: "a@b.de", State: "NW", WeeklyHours: 38.75, LeaveDaysPerYear: 30},
				Link:     portal.User{Email: "a@b.de", Name: "Ost, Eva", Roles: []string{"hr", "mitarbeiter"}, MagicLink: true},
			}}},
		{"trailing separators, blank rows, spaces", hrHeader + ";;\n\n ;;\n 8 ; Tom ; t@x.de ;;\n;;;\n", []HREmployee{{
			Employee: portal.Employee{ID: "8", Name: "Tom", Email: "t@x.de", LeaveDaysPerYear: 30},
			Link:     portal.User{Email: "t@x.de", Name: "Tom", Roles: []string{"mitarbeiter"}},
		}}},
		{"zero leave days, pipes", hrHeader + ";urlaubstage;rollen;magic_link\n9;Ida;i@x.de;0;|bewerber||;0\n", []HREmployee{{
			Employee: portal.Employee{ID: "9", Name: "Ida", Email: "i@x.de"},
			Link:     portal.User{Email: "i@x.de", Name: "Ida", Roles: []string{"bewerber"}},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeEmployeesCSV(strings.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestHREmployeesCSVProblems(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"empty file", "", []string{"line 1 | header"}},
		{"single column", "personalnummer\n1\n", []string{"line 1 | single column"}},
		{"unknown and missing columns", "personalnummer;vorname;Name;gehalt\n", []string{
			`line 1, column vorname | unknown column "vorname"`,
			`line 1, column gehalt | unknown column "gehalt"`,
			"line 1, column email | lacks the required column email",
		}},
		{"repeated column", hrHeader + ";EMAIL\n", []string{"line 1, column EMAIL | column 4 repeats email (column 3)"}},
		{"unnamed column", "personalnummer;;name;email\n", []string{"line 1, column column 2 | no name"}},
		{"required values", hrHeader + ";abteilung\n;;;Vertrieb\n", []string{
			"line 2, column personalnummer | personalnummer is required",
			"line 2, column name | name is required",
			"line 2, column email | email is required",
		}},
		{"personalnummer and email", hrHeader + "\n-1;A;not-an-address\n1 2;B;B <b@x.de>\n", []string{
			`line 2, column personalnummer | "-1" is not a valid personalnummer`,
			`line 2, column email | "not-an-address" is not an e-mail address`,
			`line 3, column personalnummer | "1 2" is not a valid personalnummer`,
			`line 3, column email | is not an e-mail address`,
		}},
		{"long name, control character", hrHeader + ";abteilung\n1;" + strings.Repeat("ä", 201) + ";a@x.de;\"Ein\nkauf\"\n", []string{
			"line 2, column name | at most 200",
			"line 2, column abteilung | control character",
		}},
		{"dates", hrHeader + ";eintritt\n1;A;a@x.de;2024-02-30\n2;B;b@x.de;31.04.2024\n3;C;c@x.de;2024/01/01\n4;D;d@x.de;01.01.1899\n", []string{
			`line 2, column eintritt | "2024-02-30" is not a day of the calendar`,
			`line 3, column eintritt | "31.04.2024" is not a day of the calendar`,
			`line 4, column eintritt | "2024/01/01" is not a date: write YYYY-MM-DD or DD.MM.YYYY`,
			"line 5, column eintritt | between 1900 and 2100",
		}},
		{"state", hrHeader + ";bundesland\n1;A;a@x.de;Bayern\n", []string{`line 2, column bundesland | state "Bayern"`}},
		{"weekly hours", hrHeader + ";wochenstunden\n1;A;a@x.de;0\n2;B;b@x.de;60,5\n3;C;c@x.de;39,555\n4;D;d@x.de;1.000\n5;E;e@x.de;-5\n", []string{
			"line 2, column wochenstunden | want more than 0 and at most 60",
			"line 3, column wochenstunden | want more than 0 and at most 60",
			`line 4, column wochenstunden | "39,555" is not a number of hours`,
			`line 5, column wochenstunden | "1.000" is not a number of hours`,
			`line 6, column wochenstunden | "-5" is not a number of hours`,
		}},
		{"leave days", hrHeader + ";urlaubstage\n1;A;a@x.de;61\n2;B;b@x.de;-1\n3;C;c@x.de;29,5\n", []string{
			"line 2, column urlaubstage | 61 leave days: want 0 to 60",
			"line 3, column urlaubstage | -1 leave days: want 0 to 60",
			`line 4, column urlaubstage | "29,5" is not a whole number of days`,
		}},
		{"magic link, roles, sso subject", hrHeader + ";magic_link;rollen;sso_subject\n1;A;a@x.de;vielleicht;admin!;\"a b\"\n2;B;b@x.de;;" + strings.Repeat("r", 33) + ";" + strings.Repeat("s", 256) + "\n", []string{
			"line 2, column sso_subject | contains a space",
			`line 2, column magic_link | "vielleicht": want ja or nein`,
			`line 2, column rollen | "admin!" is not a role`,
			"line 3, column sso_subject | at most 255",
			"line 3, column rollen | is not a role",
		}},
		{"duplicates", hrHeader + "\n1;A;a@x.de\n2;B;A@X.DE\n1;C;c@x.de\n", []string{
			"line 3, column email | e-mail address a@x.de is already on line 2",
			"line 4, column personalnummer | personalnummer 1 is already on line 2",
		}},
		{"cells and quotes", hrHeader + "\n1;A;a@x.de;extra\n2;\"B;b@x.de\n", []string{
			"line 2 | the row has 4 cells, but the header has 3 columns",
			"line 3 | quoted cell is not closed",
		}},
		{"not UTF-8", hrHeader + "\n1;M\xfcller;m@x.de\n", []string{"line 2, column name | save the file as UTF-8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeEmployeesCSV(strings.NewReader(tc.file))
			if got != nil {
				t.Errorf("returned %d employees with the error", len(got))
			}
			checkHRProblems(t, hrProblems(t, err), tc.want)
		})
	}
}

func TestHRCompensationCSV(t *testing.T) {
	const head = "personalnummer;bestandteil;betrag;turnus"
	for _, tc := range []struct {
		name, file string
		want       []string // problems; none: valid
		comps      map[string][]portal.Component
		ids        []string
	}{
		{name: "header only", file: head + ";sichtbarkeit\n", comps: map[string][]portal.Component{}, ids: []string{}},
		{name: "order kept per employee, first appearance order", file: "TURNUS,betrag,Bestandteil,personalnummer\n" +
			"einmalig,\"1.000,00\",Bonus,2\nmonatlich,10,Basis,1\nJÄHRLICH,\"1,234.5\",Prämie,2\n",
			comps: map[string][]portal.Component{
				"2": {{Name: "Bonus", AmountCents: 100000, Interval: portal.Once, Visibility: portal.Masked},
					{Name: "Prämie", AmountCents: 123450, Interval: portal.Yearly, Visibility: portal.Masked}},
				"1": {{Name: "Basis", AmountCents: 1000, Interval: portal.Monthly, Visibility: portal.Masked}},
			}, ids: []string{"2", "1"}},
		{name: "missing columns", file: "personalnummer;betrag;farbe\n", want: []string{
			`line 1, column farbe | unknown column "farbe"`,
			"line 1, column bestandteil | lacks the required column bestandteil",
			"line 1, column turnus | lacks the required column turnus",
		}},
		{name: "required values", file: head + ";sichtbarkeit\n;;;;sichtbar\n", want: []string{
			"line 2, column personalnummer | personalnummer is required",
			"line 2, column bestandteil | bestandteil is required",
			"line 2, column betrag | betrag is required",
			"line 2, column turnus | turnus is required",
		}},
		{name: "values", file: head + ";sichtbarkeit\n#1;X;5.200;wöchentlich;offen\n1;Y;5200 €;monatlich;SICHTBAR\n", want: []string{
			`line 2, column personalnummer | "#1" is not a valid personalnummer`,
			"line 2, column betrag | ambiguous",
			`line 2, column turnus | turnus must be one of monatlich, jaehrlich, einmalig, got "wöchentlich"`,
			`line 2, column sichtbarkeit | sichtbarkeit must be one of sichtbar, maskiert, got "offen"`,
			`line 3, column betrag | "5200 €" is not a euro amount`,
		}},
		{name: "duplicate component", file: head + "\n1;Grundgehalt;1;monatlich\n2;Grundgehalt;1;monatlich\n1;GRUNDGEHALT;2;einmalig\n", want: []string{
			`line 4, column bestandteil | employee 1 already has a component "GRUNDGEHALT" on line 2`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comps, ids, err := DecodeCompensationCSV(strings.NewReader(tc.file))
			if tc.want != nil {
				if comps != nil || ids != nil {
					t.Errorf("returned %v %v with the error", comps, ids)
				}
				checkHRProblems(t, hrProblems(t, err), tc.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(comps, tc.comps) || !reflect.DeepEqual(ids, tc.ids) {
				t.Errorf("got %+v %v, want %+v %v", comps, ids, tc.comps, tc.ids)
			}
		})
	}
}

func TestHRParseEuroCents(t *testing.T) {
	for _, tc := range []struct {
		in    string
		cents int64
		err   string // a part of the message; empty: valid
	}{
		{"5200,00", 520000, ""},
		{"5.200,00", 520000, ""},
		{"5200.00", 520000, ""},
		{"5,200.00", 520000, ""},
		{"5200", 520000, ""},
		{"0,5", 50, ""},
		{"0.05", 5, ""},
		{"5,20", 520, ""},
		{"1.234.567,89", 123456789, ""},
		{"1,234,567.89", 123456789, ""},
		{"1.234.567", 123456700, ""},
		{"-150,00", -15000, ""},
		{"-0", 0, ""},
		{"999999999,99", 99999999999, ""},
		{"0001,10", 110, ""},
		{"5.200", 0, "ambiguous"},
		{"5,200", 0, "at most two decimals"},
		{"5200,001", 0, "at most two decimals"},
		{"1000000000", 0, "more than 999,999,999.99"},
		{"", 0, "not a euro amount"},
		{"-", 0, "not a euro amount"},
		{",50", 0, "not a euro amount"},
		{"5200,", 0, "not a euro amount"},
		{"5.200,", 0, "not a euro amount"},
		{"5,200,00", 0, "not a euro amount"},
		{"52.00.00", 0, "not a euro amount"},
		{"5.20,00", 0, "not a euro amount"},
		{"5,200.00,00", 0, "not a euro amount"},
		{"12345.678,00", 0, "not a euro amount"},
		{"+5", 0, "not a euro amount"},
		{"5e3", 0, "not a euro amount"},
		{"5 200,00", 0, "not a euro amount"},
		{"EUR 5", 0, "not a euro amount"},
	} {
		got, err := ParseEuroCents(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.cents):
			t.Errorf("ParseEuroCents(%q) = %d, %v; want %d", tc.in, got, err, tc.cents)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || pipeline.KindOf(err) != pipeline.Invalid):
			t.Errorf("ParseEuroCents(%q) = %d, %v; want an invalid error with %q", tc.in, got, err, tc.err)
		}
	}
}

func TestHRFieldParsers(t *testing.T) {
	pair := func(v any, err error) string { return fmt.Sprintf("%v %v", v, err) }
	day := func(s string) any {
		d, err := ParseEntryDate(s)
		if err != nil {
			return err.Error()
		}
		return d
	}
	for _, tc := range []struct {
		got, want any
	}{
		{day(""), pipeline.Day{}},
		{day("2024-02-29"), pipeline.NewDay(2024, 2, 29)},
		{day("1.2.2020"), pipeline.NewDay(2020, 2, 1)},
		{day("29.02.2023"), `"29.02.2023" is not a day of the calendar`},
		{day("2024-2-1"), `"2024-2-1" is not a date: write YYYY-MM-DD or DD.MM.YYYY`},
		{pair(ParseWeeklyHours("")), "0 <nil>"},
		{pair(ParseWeeklyHours("60")), "60 <nil>"},
		{pair(ParseWeeklyHours("0,01")), "0.01 <nil>"},
		{pair(ParseLeaveDays("")), "30 <nil>"},
		{pair(ParseLeaveDays("60")), "60 <nil>"},
		{pair(ParseYesNo("Ja")), "true <nil>"},
		{pair(ParseYesNo("1")), "true <nil>"},
		{pair(ParseYesNo("FALSE")), "false <nil>"},
		{pair(ParseYesNo("")), "false <nil>"},
		{pair(ParseRoles("")), "[] <nil>"},
		{pair(ParseRoles(" Mitarbeiter , hr|HR ")), "[mitarbeiter hr] <nil>"},
		{pair(ParseState("by")), "BY <nil>"},
		{pair(ParseState("")), " <nil>"},
		{pair(ParseInterval("Jährlich")), "jaehrlich <nil>"},
		{pair(ParseVisibility("")), "maskiert <nil>"},
		{pair(ParseVisibility("Sichtbar")), "sichtbar <nil>"},
		{pair(ParseSSOSubject(" 248289761001 ")), "248289761001 <nil>"},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("got %v, want %v", tc.got, tc.want)
		}
	}
}

// TestHRFromFields checks the single-record validators the command line
// uses: problems are at the column, and unknown keys are refused.
func TestHRFromFields(t *testing.T) {
	h, ps := EmployeeFromFields(map[string]string{ColPersonalnummer: "5", ColName: "Jo", ColEmail: "jo@x.de", ColRollen: "bewerber"})
	if len(ps) != 0 || h.Employee.ID != "5" || !reflect.DeepEqual(h.Link.Roles, []string{"bewerber"}) || h.Employee.LeaveDaysPerYear != 30 {
		t.Errorf("valid fields: %+v %v", h, ps)
	}
	_, ps = EmployeeFromFields(map[string]string{ColPersonalnummer: "5", ColName: "Jo", ColEmail: "jo@x.de", ColUrlaubstage: "99", "gehalt": "1"})
	if len(ps) != 2 || strings.Join(ps[0].Loc, ".") != "gehalt" || strings.Join(ps[1].Loc, ".") != ColUrlaubstage {
		t.Errorf("problems: %+v", ps)
	}
	c, ps := ComponentFromFields(map[string]string{ColBestandteil: "Basis", ColBetrag: "1,5", ColTurnus: "einmalig"})
	if len(ps) != 0 || c != (portal.Component{Name: "Basis", AmountCents: 150, Interval: portal.Once, Visibility: portal.Masked}) {
		t.Errorf("component: %+v %v", c, ps)
	}
	if _, ps := ComponentFromFields(map[string]string{ColBetrag: "x"}); len(ps) != 3 {
		t.Errorf("component problems: %+v", ps)
	}
}

// TestHRMaxProblems checks that a file of many bad rows reports at most
// MaxProblems problems and says that checking stopped.
func TestHRMaxProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString(hrHeader + "\n")
	for i := range ingest.MaxProblems + 200 {
		fmt.Fprintf(&b, "%d;Name;kaputt\n", i)
	}
	got, err := DecodeEmployeesCSV(strings.NewReader(b.String()))
	if got != nil {
		t.Fatal("employees returned with the error")
	}
	ps := hrProblems(t, err)
	if len(ps) != ingest.MaxProblems || !strings.HasPrefix(ps[ingest.MaxProblems-1], fmt.Sprintf("line %d, column email", ingest.MaxProblems+1)) {
		t.Errorf("%d problems, last %q", len(ps), ps[len(ps)-1])
	}
	if !strings.Contains(err.Error(), "checking stopped after 1000 problems") {
		t.Errorf("error text lacks the cap: %.200s", err.Error())
	}
}

// TestHRErrorText checks the message the command line prints: every
// problem on its own line with line and column.
func TestHRErrorText(t *testing.T) {
	_, err := DecodeEmployeesCSV(strings.NewReader(hrHeader + "\n1;A;x\n2;;b@x.de\n"))
	want := "the file has 2 problems:\n" +
		"  line 2, column email: \"x\" is not an e-mail address\n" +
		"  line 3, column name: name is required"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
