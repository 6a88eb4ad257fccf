package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/ingest/hr"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// This file holds HR's commands that load the employees' portal: employee
// records and the users who sign in for them, compensation, applicants, and
// the state of certificate requests. Every value is checked by the rules of
// HR's CSV files (ingest/hr) before anything is written.

func cmdPortalEmployeeImport(a *app, fs *flag.FlagSet) action {
	return oneArg("FILE.csv", a.portalEmployeeImport)
}

func cmdPortalEmployeeList(a *app, fs *flag.FlagSet) action {
	return listCmd(a, fs, listEmployees,
		"ID\tNAME\tEMAIL\tDEPARTMENT\tSTATE\tHOURS\tLEAVE DAYS\tLOGIN\tCOMPONENTS", func(e employeeItem) []string {
			login := []string{}
			if e.User != nil && e.User.SSOSubject != "" {
				login = append(login, "sso")
			}
			if e.User != nil && e.User.MagicLink {
				login = append(login, "magic-link")
			}
			return []string{e.ID, e.Name, e.Email, orDash(e.Department), orDash(e.State),
				strconv.FormatFloat(e.WeeklyHours, 'f', -1, 64), strconv.Itoa(e.LeaveDaysPerYear),
				orDash(strings.Join(login, ",")), strconv.Itoa(len(e.Compensation))}
		})
}

func cmdPortalCompensationImport(a *app, fs *flag.FlagSet) action {
	return oneArg("FILE.csv", a.portalCompensationImport)
}

func cmdPortalCertificateStatus(a *app, fs *flag.FlagSet) action {
	return func(ctx context.Context, pos []string) error { return a.portalCertificateStatus(ctx, pos) }
}

// componentFlags collects the repeatable --component flag.
type componentFlags []string

func (c *componentFlags) String() string { return strings.Join(*c, " ") }

func (c *componentFlags) Set(s string) error { *c = append(*c, s); return nil }

// employeeFlags names, for each column of an employees file, the flag of
// `portal employee put` that gives it, so that a problem names the flag.
var employeeFlags = map[string]string{
	hr.ColPersonalnummer: "ID", hr.ColName: "--name", hr.ColEmail: "--email",
	hr.ColAbteilung: "--department", hr.ColPosition: "--position", hr.ColEintritt: "--entry-date",
	hr.ColBundesland: "--state", hr.ColWochenstunden: "--weekly-hours", hr.ColUrlaubstage: "--leave-days",
	hr.ColSSOSubject: "--sso-subject", hr.ColMagicLink: "--magic-link", hr.ColRollen: "--roles",
}

func cmdPortalEmployeePut(a *app, fs *flag.FlagSet) action {
	fields := map[string]string{}
	str := func(name, column, help string) {
		fs.Func(name, help, func(v string) error { fields[column] = v; return nil })
	}
	str("name", hr.ColName, "full name (required)")
	str("email", hr.ColEmail, "e-mail address, also the sign-in address (required)")
	str("department", hr.ColAbteilung, "department")
	str("position", hr.ColPosition, "position")
	str("entry-date", hr.ColEintritt, "entry date, YYYY-MM-DD or DD.MM.YYYY")
	str("state", hr.ColBundesland, "federal state code whose public holidays are no leave days (BE, BY, ...)")
	str("weekly-hours", hr.ColWochenstunden, "contractual hours per week, more than 0 and at most 60")
	str("leave-days", hr.ColUrlaubstage, fmt.Sprintf("yearly leave days, 0 to 60 (default %d)", hr.DefaultLeaveDays))
	str("sso-subject", hr.ColSSOSubject, "subject (sub) at the identity provider portal.oidc.issuer")
	str("roles", hr.ColRollen, "comma-separated roles (default "+portal.RoleEmployee+")")
	magic := fs.Bool("magic-link", false, "allow sign-in by magic link to the e-mail address")
	var comps componentFlags
	fs.Var(&comps, "component", "a compensation component NAME=EUR:INTERVAL[:VISIBILITY], repeatable; replaces the set")
	return func(ctx context.Context, pos []string) error {
		return a.portalEmployeePut(ctx, pos, fields, *magic, comps)
	}
}

func (a *app) portalEmployeePut(ctx context.Context, pos []string, fields map[string]string, magic bool, comps componentFlags) error {
	if len(pos) != 1 {
		return usagef("want exactly one ID (the personalnummer)")
	}
	fields[hr.ColPersonalnummer] = pos[0]
	fields[hr.ColMagicLink] = strconv.FormatBool(magic)
	h, problems := hr.EmployeeFromFields(fields)
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, employeeFlags[p.Loc[0]]+": "+p.Msg)
	}
	var set []portal.Component
	for _, c := range comps {
		comp, err := parseComponentFlag(c)
		if err != nil {
			msgs = append(msgs, err.Error())
			continue
		}
		if i := slices.IndexFunc(set, func(o portal.Component) bool { return strings.EqualFold(o.Name, comp.Name) }); i >= 0 {
			msgs = append(msgs, fmt.Sprintf("--component %q: the component %q is given twice", c, set[i].Name))
			continue
		}
		set = append(set, comp)
	}
	if len(msgs) > 0 {
		return usagef("%s: %s", pos[0], strings.Join(msgs, "; "))
	}
	if err := a.linkIssuer(&h.Link, "--sso-subject"); err != nil {
		return err
	}
	db, err := a.openDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	now := a.now()
	created, err := db.PutEmployee(ctx, h.Employee, h.Link, now)
	if err != nil {
		return err
	}
	a.note(fmt.Sprintf("employee %s %s", h.Employee.ID, createdOrUpdated(created)), "employee", h.Employee.ID)
	if len(comps) > 0 {
		if err := db.PutCompensation(ctx, h.Employee.ID, set, now); err != nil {
			return err
		}
		a.note(fmt.Sprintf("compensation of employee %s: %d components", h.Employee.ID, len(set)), "employee", h.Employee.ID, "components", len(set))
	}
	return nil
}

// parseComponentFlag parses NAME=EUR:INTERVAL[:VISIBILITY] by the rules of
// a compensation file's row. The name ends at the last '=', so it may hold
// ':' but not '='; the amount may use a decimal comma.
func parseComponentFlag(s string) (portal.Component, error) {
	bad := func(msg string) (portal.Component, error) {
		return portal.Component{}, fmt.Errorf("--component %q: %s", s, msg)
	}
	eq := strings.LastIndexByte(s, '=')
	if eq < 0 {
		return bad("want NAME=EUR:INTERVAL[:VISIBILITY], as in Grundgehalt=5200.00:monatlich:sichtbar")
	}
	parts := strings.Split(s[eq+1:], ":")
	if len(parts) < 2 || len(parts) > 3 {
		return bad("want NAME=EUR:INTERVAL[:VISIBILITY], as in Grundgehalt=5200.00:monatlich:sichtbar")
	}
	fields := map[string]string{hr.ColBestandteil: s[:eq], hr.ColBetrag: parts[0], hr.ColTurnus: parts[1]}
	if len(parts) == 3 {
		fields[hr.ColSichtbarkeit] = parts[2]
	}
	c, problems := hr.ComponentFromFields(fields)
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Msg
		}
		return bad(strings.Join(msgs, "; "))
	}
	return c, nil
}

// linkIssuer sets the configured identity provider as the issuer of a
// user's SSO subject. A subject without a configured issuer could never be
// matched at sign-in, so it is refused.
func (a *app) linkIssuer(u *portal.User, what string) error {
	if u.SSOSubject == "" {
		return nil
	}
	issuer := a.cfg.Portal.OIDC.Issuer
	if issuer == "" {
		return pipeline.Errorf(pipeline.Invalid, "%s needs the identity provider's issuer: configure portal.oidc.issuer (SCHEDBRIDGE_PORTAL_OIDC_ISSUER) first", what)
	}
	u.SSOIssuer = issuer
	return nil
}

func createdOrUpdated(created bool) string {
	if created {
		return "created"
	}
	return "updated"
}

// openHRFile opens an HR file and decodes it with decode; a bad file is an
// Invalid error that lists its problems under the file's name.
func openHRFile[T any](path string, decode func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := inputFile(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	v, err := decode(f)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func (a *app) portalEmployeeImport(ctx context.Context, path string) error {
	const what = "portal employee import"
	rows, err := openHRFile(path, hr.DecodeEmployeesCSV)
	if err != nil {
		return err
	}
	var subjects []string
	for _, r := range rows {
		if r.Link.SSOSubject != "" {
			subjects = append(subjects, r.Employee.ID)
		}
	}
	if len(subjects) > 0 && a.cfg.Portal.OIDC.Issuer == "" {
		return pipeline.Errorf(pipeline.Invalid, "%s: the sso_subject of personalnummer %s needs the identity provider's issuer: configure portal.oidc.issuer (SCHEDBRIDGE_PORTAL_OIDC_ISSUER) first",
			path, abbreviate(subjects))
	}
	db, err := a.openDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	now := a.now()
	created := 0
	bar := a.newProgress("task", false)
	defer bar.finish()
	for i, r := range rows {
		if err := a.linkIssuer(&r.Link, "sso_subject"); err != nil {
			return err
		}
		c, err := db.PutEmployee(ctx, r.Employee, r.Link, now)
		if err != nil {
			// The rows before are written; a new run of the corrected file
			// writes them again unchanged.
			return fmt.Errorf("%s: row of personalnummer %s (%d rows written before it): %w", path, r.Employee.ID, i, err)
		}
		if c {
			created++
		}
		bar.update(what, int64(i+1), int64(len(rows)))
	}
	bar.finish()
	a.note(fmt.Sprintf("%s: %d rows, %d employees created, %d updated", what, len(rows), created, len(rows)-created),
		"rows", len(rows), "created", created, "updated", len(rows)-created)
	return nil
}

type compensationFile struct {
	comps map[string][]portal.Component
	ids   []string
}

func decodeCompensation(r io.Reader) (compensationFile, error) {
	comps, ids, err := hr.DecodeCompensationCSV(r)
	return compensationFile{comps, ids}, err
}

func (a *app) portalCompensationImport(ctx context.Context, path string) error {
	const what = "portal compensation import"
	file, err := openHRFile(path, decodeCompensation)
	if err != nil {
		return err
	}
	db, err := a.openDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	// Every employee must exist before anything is written, so that a file
	// with a wrong personalnummer changes nothing.
	emps, err := db.ListEmployees(ctx)
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(emps))
	for _, e := range emps {
		known[e.ID] = true
	}
	var unknown []string
	for _, id := range file.ids {
		if !known[id] {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return pipeline.Errorf(pipeline.Invalid, "%s: no employee record for personalnummer %s; load the employees first (portal employee import), nothing was written",
			path, abbreviate(unknown))
	}
	total := 0
	for _, id := range file.ids {
		total += len(file.comps[id])
	}
	now := a.now()
	created, done := 0, 0
	bar := a.newProgress("task", false)
	defer bar.finish()
	for i, id := range file.ids {
		before, err := db.Compensation(ctx, id)
		if err != nil {
			return err
		}
		if err := db.PutCompensation(ctx, id, file.comps[id], now); err != nil {
			return fmt.Errorf("%s: personalnummer %s (%d of %d employees written before it): %w", path, id, i, len(file.ids), err)
		}
		if len(before) == 0 {
			created++
		}
		for range file.comps[id] {
			done++
			bar.update(what, int64(done), int64(total))
		}
	}
	bar.finish()
	a.note(fmt.Sprintf("%s: %d rows for %d employees, %d compensation sets created, %d replaced",
		what, total, len(file.ids), created, len(file.ids)-created),
		"rows", total, "employees", len(file.ids), "created", created, "replaced", len(file.ids)-created)
	return nil
}

// abbreviate lists up to ten ids and counts the rest.
func abbreviate(ids []string) string {
	if len(ids) <= 10 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:10], ", "), len(ids)-10)
}

func cmdPortalUserPut(a *app, fs *flag.FlagSet) action {
	email := fs.String("email", "", "e-mail address, the sign-in address (required)")
	name := fs.String("name", "", "full name (required)")
	roles := fs.String("roles", "", "comma-separated roles (default "+portal.RoleApplicant+")")
	magic := fs.Bool("magic-link", true, "allow sign-in by magic link to the e-mail address")
	return noArgs(func(ctx context.Context) error {
		return a.portalUserPut(ctx, *email, *name, *roles, *magic)
	})
}

func (a *app) portalUserPut(ctx context.Context, email, name, roles string, magic bool) error {
	var msgs []string
	addr, err := portal.NormalizeEmail(email)
	if email == "" {
		msgs = append(msgs, "--email is required")
	} else if err != nil {
		msgs = append(msgs, "--email: "+pipeline.MessageOf(err))
	}
	n, err := hr.CheckText("--name", name, true)
	if err != nil {
		msgs = append(msgs, pipeline.MessageOf(err))
	}
	rs, err := hr.ParseRoles(roles)
	if err != nil {
		msgs = append(msgs, "--roles: "+pipeline.MessageOf(err))
	}
	if len(msgs) > 0 {
		return usagef("%s", strings.Join(msgs, "; "))
	}
	if rs == nil {
		rs = []string{portal.RoleApplicant}
	}
	db, err := a.openDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	// A user who signs in for an employee record is HR's employee load's to
	// change: its roles would otherwise become an applicant's.
	switch cur, err := db.UserByEmail(ctx, addr); {
	case err == nil && cur.EmployeeID != "":
		return pipeline.Errorf(pipeline.Invalid, "%s signs in for employee %s; change it with portal employee put %s", addr, cur.EmployeeID, cur.EmployeeID)
	case err != nil && pipeline.KindOf(err) != pipeline.NotFound:
		return err
	}
	u, created, err := db.PutUser(ctx, portal.User{Email: addr, Name: n, Roles: rs, MagicLink: magic}, a.now())
	if err != nil {
		return err
	}
	a.note(fmt.Sprintf("user %s %s (id %s, roles %s, magic link %t)", u.Email, createdOrUpdated(created), u.ID, strings.Join(u.Roles, ","), u.MagicLink),
		"user", u.ID, "email", u.Email)
	return nil
}

func (a *app) portalCertificateStatus(ctx context.Context, args []string) error {
	if len(args) != 2 {
		return usagef("want ID and one of %s", certificateStatuses())
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return usagef("%q is not a certificate id (a positive number)", args[0])
	}
	status, err := portal.ParseEnum("status", args[1], portal.CertificateStatuses)
	if err != nil {
		return err
	}
	db, err := a.openDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.SetCertificateStatus(ctx, id, status, a.now())
	if err != nil {
		return err
	}
	a.note(fmt.Sprintf("certificate %d (%s of employee %s) is %s", c.ID, c.Type, c.EmployeeID, c.Status),
		"certificate", c.ID, "employee", c.EmployeeID, "status", string(c.Status))
	return nil
}

func certificateStatuses() string {
	s := make([]string, len(portal.CertificateStatuses))
	for i, c := range portal.CertificateStatuses {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// employeeItem is an employee as `portal employee list` shows it: the
// record, the user who signs in for it and the compensation.
type employeeItem struct {
	ID               string          `json:"id"`
	Name             string          `json:"name"`
	Email            string          `json:"email"`
	Department       string          `json:"department,omitempty"`
	Position         string          `json:"position,omitempty"`
	EntryDate        string          `json:"entry_date,omitempty"`
	State            string          `json:"state,omitempty"`
	WeeklyHours      float64         `json:"weekly_hours"`
	LeaveDaysPerYear int             `json:"leave_days_per_year"`
	UpdatedAt        time.Time       `json:"updated_at"`
	User             *userItem       `json:"user,omitempty"`
	Compensation     []componentItem `json:"compensation"`
}

type userItem struct {
	ID         string   `json:"id"`
	Roles      []string `json:"roles"`
	MagicLink  bool     `json:"magic_link"`
	SSOIssuer  string   `json:"sso_issuer,omitempty"`
	SSOSubject string   `json:"sso_subject,omitempty"`
}

type componentItem struct {
	Name        string `json:"name"`
	Amount      string `json:"amount"` // euro, "5200.00"
	AmountCents int64  `json:"amount_cents"`
	Interval    string `json:"interval"`
	Visibility  string `json:"visibility"`
}

// listEmployees reads every employee with its user and compensation.
func listEmployees(db *sqldb.DB, ctx context.Context) ([]employeeItem, error) {
	emps, err := db.ListEmployees(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]employeeItem, len(emps))
	for i, e := range emps {
		it := employeeItem{ID: e.ID, Name: e.Name, Email: e.Email, Department: e.Department, Position: e.Position,
			State: e.State, WeeklyHours: e.WeeklyHours, LeaveDaysPerYear: e.LeaveDaysPerYear, UpdatedAt: e.UpdatedAt,
			Compensation: []componentItem{}}
		if !e.EntryDate.IsZero() {
			it.EntryDate = e.EntryDate.String()
		}
		switch u, err := db.UserByEmail(ctx, e.Email); {
		case err == nil && u.EmployeeID == e.ID:
			it.User = &userItem{ID: u.ID, Roles: u.Roles, MagicLink: u.MagicLink, SSOIssuer: u.SSOIssuer, SSOSubject: u.SSOSubject}
		case err != nil && pipeline.KindOf(err) != pipeline.NotFound:
			return nil, err
		}
		comps, err := db.Compensation(ctx, e.ID)
		if err != nil {
			return nil, err
		}
		for _, c := range comps {
			it.Compensation = append(it.Compensation, componentItem{Name: c.Name, Amount: portal.FormatCents(c.AmountCents),
				AmountCents: c.AmountCents, Interval: string(c.Interval), Visibility: string(c.Visibility)})
		}
		out[i] = it
	}
	return out, nil
}
