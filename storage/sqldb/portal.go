package sqldb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
)

// This file is the store of the employees' self-service portal (the
// contract is api/portal.Store) and the HR writes the CLI uses to load
// employee records, users, compensation and certificate states. Times are
// kept in UTC at microsecond precision (makoTime), so that a time written
// equals the one read back on both backends.

type portalUserRow struct {
	bun.BaseModel `bun:"table:portal_users"`

	ID    string `bun:"id,pk"`
	Email string `bun:"email"`
	Name  string `bun:"name"`
	Roles string `bun:"roles"`
	// The nullable columns are NULL when empty, so that the unique indexes
	// on them do not make two users without a link collide.
	EmployeeID string    `bun:"employee_id,nullzero"`
	SSOIssuer  string    `bun:"sso_issuer,nullzero"`
	SSOSubject string    `bun:"sso_subject,nullzero"`
	MagicLink  bool      `bun:"magic_link"`
	CreatedAt  time.Time `bun:"created_at"`
	UpdatedAt  time.Time `bun:"updated_at"`
}

func newPortalUserRow(u portal.User) (portalUserRow, error) {
	roles := u.Roles
	if roles == nil {
		roles = []string{}
	}
	b, err := json.Marshal(roles)
	if err != nil {
		return portalUserRow{}, fmt.Errorf("encode roles: %w", err)
	}
	updated := u.UpdatedAt
	if updated.IsZero() {
		updated = u.CreatedAt
	}
	return portalUserRow{ID: u.ID, Email: u.Email, Name: u.Name, Roles: string(b), EmployeeID: u.EmployeeID,
		SSOIssuer: u.SSOIssuer, SSOSubject: u.SSOSubject, MagicLink: u.MagicLink,
		CreatedAt: makoTime(u.CreatedAt), UpdatedAt: makoTime(updated)}, nil
}

func (r portalUserRow) domain() (portal.User, error) {
	var roles []string
	if err := json.Unmarshal([]byte(r.Roles), &roles); err != nil {
		return portal.User{}, fmt.Errorf("user %s: stored roles: %w", r.ID, err)
	}
	if len(roles) == 0 {
		roles = nil
	}
	return portal.User{ID: r.ID, Email: r.Email, Name: r.Name, Roles: roles, EmployeeID: r.EmployeeID,
		SSOIssuer: r.SSOIssuer, SSOSubject: r.SSOSubject, MagicLink: r.MagicLink,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}, nil
}

type portalEmployeeRow struct {
	bun.BaseModel `bun:"table:portal_employees"`

	ID               string    `bun:"id,pk"`
	Name             string    `bun:"name"`
	Email            string    `bun:"email"`
	Department       string    `bun:"department"`
	Position         string    `bun:"position"`
	EntryDate        string    `bun:"entry_date"`
	State            string    `bun:"state"`
	WeeklyHours      float64   `bun:"weekly_hours"`
	LeaveDaysPerYear int       `bun:"leave_days_per_year"`
	UpdatedAt        time.Time `bun:"updated_at"`
}

func (r portalEmployeeRow) domain() (portal.Employee, error) {
	e := portal.Employee{ID: r.ID, Name: r.Name, Email: r.Email, Department: r.Department, Position: r.Position,
		State: r.State, WeeklyHours: r.WeeklyHours, LeaveDaysPerYear: r.LeaveDaysPerYear, UpdatedAt: r.UpdatedAt.UTC()}
	if r.EntryDate != "" {
		d, err := pipeline.ParseDay(r.EntryDate)
		if err != nil {
			return portal.Employee{}, fmt.Errorf("employee %s: stored entry_date: %w", r.ID, err)
		}
		e.EntryDate = d
	}
	return e, nil
}

type portalComponentRow struct {
	bun.BaseModel `bun:"table:portal_compensation"`

	EmployeeID  string `bun:"employee_id,pk"`
	Ordinal     int    `bun:"ordinal,pk"`
	Name        string `bun:"name"`
	AmountCents int64  `bun:"amount_cents"`
	Interval    string `bun:"pay_interval"`
	Visibility  string `bun:"visibility"`
}

type portalSessionRow struct {
	bun.BaseModel `bun:"table:portal_sessions"`

	IDHash     string    `bun:"id_hash,pk"`
	CSRFHash   string    `bun:"csrf_hash"`
	UserID     string    `bun:"user_id"`
	Method     string    `bun:"method"`
	Client     string    `bun:"client"`
	CreatedAt  time.Time `bun:"created_at"`
	LastSeenAt time.Time `bun:"last_seen_at"`
	ExpiresAt  time.Time `bun:"expires_at"`
	Operator   bool      `bun:"operator_claim"`
}

func (r portalSessionRow) domain() portal.Session {
	return portal.Session{IDHash: r.IDHash, CSRFHash: r.CSRFHash, UserID: r.UserID, Method: portal.Method(r.Method),
		Client: portal.Client(r.Client), CreatedAt: r.CreatedAt.UTC(), LastSeenAt: r.LastSeenAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
		OperatorClaim: r.Operator}
}

type portalMagicLinkRow struct {
	bun.BaseModel `bun:"table:portal_magic_links"`

	Hash      string     `bun:"hash,pk"`
	UserID    string     `bun:"user_id"`
	Email     string     `bun:"email"`
	CreatedAt time.Time  `bun:"created_at"`
	ExpiresAt time.Time  `bun:"expires_at"`
	UsedAt    *time.Time `bun:"used_at"`
}

func (r portalMagicLinkRow) domain() portal.MagicLink {
	m := portal.MagicLink{Hash: r.Hash, UserID: r.UserID, Email: r.Email, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}
	if r.UsedAt != nil {
		t := r.UsedAt.UTC()
		m.UsedAt = &t
	}
	return m
}

type portalLoginFlowRow struct {
	bun.BaseModel `bun:"table:portal_login_flows"`

	StateHash   string    `bun:"state_hash,pk"`
	BrowserHash string    `bun:"browser_hash"`
	Verifier    string    `bun:"verifier"`
	Nonce       string    `bun:"nonce"`
	Next        string    `bun:"next_path"`
	CreatedAt   time.Time `bun:"created_at"`
	ExpiresAt   time.Time `bun:"expires_at"`
}

type portalLeaveRow struct {
	bun.BaseModel `bun:"table:portal_leave_requests"`

	ID          int64     `bun:"id,pk,autoincrement"`
	EmployeeID  string    `bun:"employee_id"`
	Type        string    `bun:"type"`
	StartDate   string    `bun:"start_date"`
	EndDate     string    `bun:"end_date"`
	WorkingDays int       `bun:"working_days"`
	Comment     string    `bun:"comment"`
	Status      string    `bun:"status"`
	CreatedAt   time.Time `bun:"created_at"`
}

func (r portalLeaveRow) domain() (portal.LeaveRequest, error) {
	start, end, err := parseRange(r.StartDate, r.EndDate)
	if err != nil {
		return portal.LeaveRequest{}, fmt.Errorf("leave request %d: %w", r.ID, err)
	}
	return portal.LeaveRequest{ID: r.ID, EmployeeID: r.EmployeeID, Type: portal.LeaveType(r.Type), Start: start, End: end,
		WorkingDays: r.WorkingDays, Comment: r.Comment, Status: portal.LeaveStatus(r.Status), CreatedAt: r.CreatedAt.UTC()}, nil
}

type portalSickRow struct {
	bun.BaseModel `bun:"table:portal_sick_leaves"`

	ID          int64     `bun:"id,pk,autoincrement"`
	EmployeeID  string    `bun:"employee_id"`
	StartDate   string    `bun:"start_date"`
	EndDate     string    `bun:"end_date"`
	Certificate bool      `bun:"certificate"`
	Comment     string    `bun:"comment"`
	CreatedAt   time.Time `bun:"created_at"`
}

func (r portalSickRow) domain() (portal.SickLeave, error) {
	start, end, err := parseRange(r.StartDate, r.EndDate)
	if err != nil {
		return portal.SickLeave{}, fmt.Errorf("sick-leave report %d: %w", r.ID, err)
	}
	return portal.SickLeave{ID: r.ID, EmployeeID: r.EmployeeID, Start: start, End: end, Certificate: r.Certificate,
		Comment: r.Comment, CreatedAt: r.CreatedAt.UTC()}, nil
}

type portalCertificateRow struct {
	bun.BaseModel `bun:"table:portal_certificates"`

	ID         int64     `bun:"id,pk,autoincrement"`
	EmployeeID string    `bun:"employee_id"`
	Type       string    `bun:"type"`
	Purpose    string    `bun:"purpose"`
	Language   string    `bun:"language"`
	Status     string    `bun:"status"`
	CreatedAt  time.Time `bun:"created_at"`
	UpdatedAt  time.Time `bun:"updated_at"`
}

func (r portalCertificateRow) domain() portal.Certificate {
	return portal.Certificate{ID: r.ID, EmployeeID: r.EmployeeID, Type: portal.CertificateType(r.Type), Purpose: r.Purpose,
		Language: r.Language, Status: portal.CertificateStatus(r.Status), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

func parseRange(start, end string) (pipeline.Day, pipeline.Day, error) {
	s, err := pipeline.ParseDay(start)
	if err != nil {
		return pipeline.Day{}, pipeline.Day{}, fmt.Errorf("stored start_date: %w", err)
	}
	e, err := pipeline.ParseDay(end)
	if err != nil {
		return pipeline.Day{}, pipeline.Day{}, fmt.Errorf("stored end_date: %w", err)
	}
	return s, e, nil
}

// isForeignKeyViolation reports a reference to a row that does not exist:
// SQLSTATE 23503 on PostgreSQL, SQLITE_CONSTRAINT_FOREIGNKEY (787) on SQLite.
func isForeignKeyViolation(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState() == "23503"
	}
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code() == 787
}

// newUserID returns a random user id: "u_" and 80 random bits in hex.
func newUserID() string {
	b := make([]byte, 10)
	// crypto/rand.Read never fails on the supported platforms; it aborts the
	// program rather than return weak bytes.
	_, _ = rand.Read(b)
	return "u_" + hex.EncodeToString(b)
}

var (
	portalIntervals    = []portal.Interval{portal.Monthly, portal.Yearly, portal.Once}
	portalVisibilities = []portal.Visibility{portal.Visible, portal.Masked}
)

// ---- Users ----

// userWhere reads the one user matching the condition; what names it in
// the NotFound message.
func (db *DB) userWhere(ctx context.Context, idb bun.IDB, what, where string, args ...any) (portal.User, error) {
	var row portalUserRow
	err := idb.NewSelect().Model(&row).Where(where, args...).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return portal.User{}, pipeline.Errorf(pipeline.NotFound, "no user with %s", what)
	}
	if err != nil {
		return portal.User{}, err
	}
	return row.domain()
}

// UserByID returns the user with this id, or NotFound.
func (db *DB) UserByID(ctx context.Context, id string) (portal.User, error) {
	u, err := db.userWhere(ctx, db.bun, "id "+id, "id = ?", id)
	if err != nil {
		return portal.User{}, fmt.Errorf("portal user %s: %w", id, err)
	}
	return u, nil
}

// UserBySSO returns the user linked to the SSO issuer and subject, or
// NotFound (also when either is empty).
func (db *DB) UserBySSO(ctx context.Context, issuer, subject string) (portal.User, error) {
	if issuer == "" || subject == "" {
		return portal.User{}, pipeline.Errorf(pipeline.NotFound, "no user with an empty SSO issuer or subject")
	}
	u, err := db.userWhere(ctx, db.bun, "this SSO subject", "sso_issuer = ? AND sso_subject = ?", issuer, subject)
	if err != nil {
		return portal.User{}, fmt.Errorf("portal user by SSO subject: %w", err)
	}
	return u, nil
}

// UserByEmail returns the user with this address, compared in lower case,
// or NotFound.
func (db *DB) UserByEmail(ctx context.Context, email string) (portal.User, error) {
	email = normEmail(email)
	u, err := db.userWhere(ctx, db.bun, "this e-mail address", "email = ?", email)
	if err != nil {
		return portal.User{}, fmt.Errorf("portal user by e-mail: %w", err)
	}
	return u, nil
}

// LinkSSO records the SSO issuer and subject on a user that has none yet.
// Linking the subject the user already has is no error; Conflict when the
// user is linked to another subject or the subject to another user.
func (db *DB) LinkSSO(ctx context.Context, userID, issuer, subject string, at time.Time) error {
	if issuer == "" || subject == "" {
		return pipeline.Errorf(pipeline.Invalid, "link SSO: issuer and subject are required")
	}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		u, err := db.userWhere(ctx, tx, "id "+userID, "id = ?", userID)
		if err != nil {
			return err
		}
		if u.SSOIssuer != "" || u.SSOSubject != "" {
			if u.SSOIssuer == issuer && u.SSOSubject == subject {
				return nil
			}
			return pipeline.Errorf(pipeline.Conflict, "the user is linked to another SSO subject")
		}
		if err := db.ssoFree(ctx, tx, issuer, subject, userID); err != nil {
			return err
		}
		_, err = tx.NewUpdate().Model((*portalUserRow)(nil)).Set("sso_issuer = ?", issuer).Set("sso_subject = ?", subject).
			Set("updated_at = ?", makoTime(at)).Where("id = ?", userID).Exec(ctx)
		return uniqueAsConflict(err, "the SSO subject is linked to another user")
	})
	if err != nil {
		return fmt.Errorf("portal user %s: link SSO: %w", userID, err)
	}
	return nil
}

// ssoFree answers Conflict when another user than self holds the subject.
func (db *DB) ssoFree(ctx context.Context, tx bun.Tx, issuer, subject, self string) error {
	if issuer == "" && subject == "" {
		return nil
	}
	n, err := tx.NewSelect().Model((*portalUserRow)(nil)).Where("sso_issuer = ? AND sso_subject = ?", issuer, subject).
		Where("id <> ?", self).Count(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		return pipeline.Errorf(pipeline.Conflict, "the SSO subject is linked to another user")
	}
	return nil
}

// uniqueAsConflict turns a unique violation into Conflict with msg, and a
// reference to a missing employee into NotFound. The checks before a write
// catch the common case; this catches a writer that slipped past them.
func uniqueAsConflict(err error, msg string) error {
	switch {
	case err == nil:
		return nil
	case isUniqueViolation(err):
		return &pipeline.Error{Kind: pipeline.Conflict, Message: msg, Err: err}
	case isForeignKeyViolation(err):
		return &pipeline.Error{Kind: pipeline.NotFound, Message: "the referenced employee or user does not exist", Err: err}
	}
	return err
}

// CreateUser stores a new user with the id the caller chose; the address is
// kept in lower case. Conflict when the address, the SSO subject or the
// employee record is taken; NotFound when the employee record does not exist.
func (db *DB) CreateUser(ctx context.Context, u portal.User) error {
	if u.ID == "" {
		return pipeline.Errorf(pipeline.Invalid, "create user: the id is required")
	}
	email, err := portal.NormalizeEmail(u.Email)
	if err != nil {
		return fmt.Errorf("create user %s: %w", u.ID, err)
	}
	u.Email = email
	if (u.SSOIssuer == "") != (u.SSOSubject == "") {
		return pipeline.Errorf(pipeline.Invalid, "create user %s: SSO issuer and subject go together", u.ID)
	}
	row, err := newPortalUserRow(u)
	if err != nil {
		return fmt.Errorf("create user %s: %w", u.ID, err)
	}
	err = db.inTx(ctx, func(tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*portalUserRow)(nil)).Where("email = ?", email).Count(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return pipeline.Errorf(pipeline.Conflict, "a user with this e-mail address exists")
		}
		if err := db.ssoFree(ctx, tx, u.SSOIssuer, u.SSOSubject, u.ID); err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(&row).Exec(ctx)
		return uniqueAsConflict(err, "the user id, e-mail address, SSO subject or employee record is taken")
	})
	if err != nil {
		return fmt.Errorf("create user %s: %w", u.ID, err)
	}
	return nil
}

// ---- Employees ----

// Employee returns the employee record, or NotFound.
func (db *DB) Employee(ctx context.Context, id string) (portal.Employee, error) {
	var row portalEmployeeRow
	err := db.bun.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return portal.Employee{}, pipeline.Errorf(pipeline.NotFound, "employee %s not found", id)
	}
	if err != nil {
		return portal.Employee{}, fmt.Errorf("employee %s: %w", id, err)
	}
	return row.domain()
}

// ListEmployees returns every employee record ordered by id.
func (db *DB) ListEmployees(ctx context.Context) ([]portal.Employee, error) {
	var rows []portalEmployeeRow
	if err := db.bun.NewSelect().Model(&rows).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list employees: %w", err)
	}
	out := make([]portal.Employee, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.domain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Compensation returns the employee's compensation components in HR's
// order; none (and no error) for an employee without any or unknown.
func (db *DB) Compensation(ctx context.Context, employeeID string) ([]portal.Component, error) {
	var rows []portalComponentRow
	if err := db.bun.NewSelect().Model(&rows).Where("employee_id = ?", employeeID).Order("ordinal").Scan(ctx); err != nil {
		return nil, fmt.Errorf("compensation of employee %s: %w", employeeID, err)
	}
	var out []portal.Component
	for _, r := range rows {
		out = append(out, portal.Component{Name: r.Name, AmountCents: r.AmountCents, Interval: portal.Interval(r.Interval),
			Visibility: portal.Visibility(r.Visibility)})
	}
	return out, nil
}

// PutEmployee is HR's load of one employee: in one transaction it creates
// or updates the employee record e (updated at at), then the user who signs
// in for it, found by link.Email (lower case; e.Email when empty). The user
// gets link's name (e's when empty), roles and magic-link permission, is
// linked to e.ID, and gets link's SSO issuer and subject when they are set
// (Conflict when another user holds that subject).
//
// When no user has link.Email but one is linked to e.ID, that user's
// address is changed to link.Email: HR changed the employee's address, and
// the user keeps its id, sessions and SSO link. When the user found by the
// address is not the one linked to e.ID, the other user loses the link, so
// that one user stands for one employee. A new user gets link.ID, or a
// random id when that is empty. created reports whether the employee record
// is new.
func (db *DB) PutEmployee(ctx context.Context, e portal.Employee, link portal.User, at time.Time) (created bool, err error) {
	if !portal.ValidEmployeeID(e.ID) {
		return false, pipeline.Errorf(pipeline.Invalid, "put employee: %q is not a valid Personalnummer", e.ID)
	}
	if e.Email != "" {
		if e.Email, err = portal.NormalizeEmail(e.Email); err != nil {
			return false, fmt.Errorf("put employee %s: %w", e.ID, err)
		}
	}
	if link.Email == "" {
		link.Email = e.Email
	}
	if link.Email, err = portal.NormalizeEmail(link.Email); err != nil {
		return false, fmt.Errorf("put employee %s: user: %w", e.ID, err)
	}
	if link.Name == "" {
		link.Name = e.Name
	}
	if (link.SSOIssuer == "") != (link.SSOSubject == "") {
		return false, pipeline.Errorf(pipeline.Invalid, "put employee %s: SSO issuer and subject go together", e.ID)
	}
	row := portalEmployeeRow{ID: e.ID, Name: e.Name, Email: e.Email, Department: e.Department, Position: e.Position,
		State: e.State, WeeklyHours: e.WeeklyHours, LeaveDaysPerYear: e.LeaveDaysPerYear, UpdatedAt: makoTime(at)}
	if !e.EntryDate.IsZero() {
		row.EntryDate = e.EntryDate.String()
	}
	err = db.inTx(ctx, func(tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*portalEmployeeRow)(nil)).Where("id = ?", e.ID).Count(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			created = true
			if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
				return err
			}
		} else if _, err := tx.NewUpdate().Model(&row).WherePK().Exec(ctx); err != nil {
			return err
		}
		_, _, err = db.putUser(ctx, tx, link, e.ID, at)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put employee %s: %w", e.ID, err)
	}
	return created, nil
}

// PutUser creates or updates the user with u.Email (lower case) without
// touching its employee link: for applicants, who have no employee record.
// It sets the name, roles and magic-link permission, and the SSO issuer and
// subject when they are set (Conflict when another user holds that subject).
// u.EmployeeID is ignored; a new user has no employee link and gets u.ID, or
// a random id when that is empty. It returns the stored user and whether it
// was created.
func (db *DB) PutUser(ctx context.Context, u portal.User, at time.Time) (portal.User, bool, error) {
	email, err := portal.NormalizeEmail(u.Email)
	if err != nil {
		return portal.User{}, false, fmt.Errorf("put user: %w", err)
	}
	u.Email = email
	if (u.SSOIssuer == "") != (u.SSOSubject == "") {
		return portal.User{}, false, pipeline.Errorf(pipeline.Invalid, "put user %s: SSO issuer and subject go together", email)
	}
	var out portal.User
	created := false
	err = db.inTx(ctx, func(tx bun.Tx) error {
		var err error
		out, created, err = db.putUser(ctx, tx, u, "", at)
		return err
	})
	if err != nil {
		return portal.User{}, false, fmt.Errorf("put user %s: %w", email, err)
	}
	return out, created, nil
}

// putUser upserts u by its (normalised) address in tx, as PutEmployee and
// PutUser describe; employeeID, when not empty, is the employee record to
// link the user to.
func (db *DB) putUser(ctx context.Context, tx bun.Tx, u portal.User, employeeID string, at time.Time) (portal.User, bool, error) {
	var cur portalUserRow
	err := tx.NewSelect().Model(&cur).Where("email = ?", u.Email).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) && employeeID != "" {
		err = tx.NewSelect().Model(&cur).Where("employee_id = ?", employeeID).Scan(ctx)
	}
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return portal.User{}, false, err
	}
	id := cur.ID
	if !exists {
		id = u.ID
		if id == "" {
			id = newUserID()
		}
	}
	if err := db.ssoFree(ctx, tx, u.SSOIssuer, u.SSOSubject, id); err != nil {
		return portal.User{}, false, err
	}
	if employeeID != "" {
		if _, err := tx.NewUpdate().Model((*portalUserRow)(nil)).Set("employee_id = NULL").Set("updated_at = ?", makoTime(at)).
			Where("employee_id = ?", employeeID).Where("id <> ?", id).Exec(ctx); err != nil {
			return portal.User{}, false, err
		}
	}
	next := portal.User{ID: id, Email: u.Email, Name: u.Name, Roles: u.Roles, EmployeeID: employeeID,
		SSOIssuer: u.SSOIssuer, SSOSubject: u.SSOSubject, MagicLink: u.MagicLink, CreatedAt: at, UpdatedAt: at}
	if exists {
		next.CreatedAt = cur.CreatedAt
		if employeeID == "" {
			next.EmployeeID = cur.EmployeeID
		}
		if u.SSOSubject == "" {
			next.SSOIssuer, next.SSOSubject = cur.SSOIssuer, cur.SSOSubject
		}
	}
	row, err := newPortalUserRow(next)
	if err != nil {
		return portal.User{}, false, err
	}
	if exists {
		_, err = tx.NewUpdate().Model(&row).WherePK().Exec(ctx)
	} else {
		_, err = tx.NewInsert().Model(&row).Exec(ctx)
	}
	if err := uniqueAsConflict(err, "the user id, e-mail address or SSO subject is taken"); err != nil {
		return portal.User{}, false, err
	}
	stored, err := row.domain()
	return stored, !exists, err
}

// PutCompensation replaces the employee's compensation components with
// comps, in their order, and marks the employee record updated at at.
// NotFound when the employee does not exist; Invalid for a component without
// a name or with an unknown interval or visibility.
func (db *DB) PutCompensation(ctx context.Context, employeeID string, comps []portal.Component, at time.Time) error {
	rows := make([]portalComponentRow, len(comps))
	for i, c := range comps {
		if strings.TrimSpace(c.Name) == "" {
			return pipeline.Errorf(pipeline.Invalid, "compensation of employee %s: component %d has no name", employeeID, i+1)
		}
		if _, err := portal.ParseEnum("interval", string(c.Interval), portalIntervals); err != nil {
			return fmt.Errorf("compensation of employee %s: component %q: %w", employeeID, c.Name, err)
		}
		if _, err := portal.ParseEnum("visibility", string(c.Visibility), portalVisibilities); err != nil {
			return fmt.Errorf("compensation of employee %s: component %q: %w", employeeID, c.Name, err)
		}
		rows[i] = portalComponentRow{EmployeeID: employeeID, Ordinal: i, Name: c.Name, AmountCents: c.AmountCents,
			Interval: string(c.Interval), Visibility: string(c.Visibility)}
	}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*portalEmployeeRow)(nil)).Set("updated_at = ?", makoTime(at)).
			Where("id = ?", employeeID).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return pipeline.Errorf(pipeline.NotFound, "employee %s not found", employeeID)
		}
		if _, err := tx.NewDelete().Model((*portalComponentRow)(nil)).Where("employee_id = ?", employeeID).Exec(ctx); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		_, err = tx.NewInsert().Model(&rows).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("put compensation of employee %s: %w", employeeID, err)
	}
	return nil
}

// ---- Sessions, magic links and login flows ----

// CreateSession stores s and, in the same transaction, deletes the session
// whose id hash is replaces (none when empty): the rotation at login.
// NotFound when the user does not exist.
func (db *DB) CreateSession(ctx context.Context, s portal.Session, replaces string) error {
	row := portalSessionRow{IDHash: s.IDHash, CSRFHash: s.CSRFHash, UserID: s.UserID, Method: string(s.Method),
		Client: string(s.Client), CreatedAt: makoTime(s.CreatedAt), LastSeenAt: makoTime(s.LastSeenAt), ExpiresAt: makoTime(s.ExpiresAt),
		Operator: s.OperatorClaim}
	if s.IDHash == "" || s.UserID == "" {
		return pipeline.Errorf(pipeline.Invalid, "create session: the id hash and the user are required")
	}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		if replaces != "" {
			if _, err := tx.NewDelete().Model((*portalSessionRow)(nil)).Where("id_hash = ?", replaces).Exec(ctx); err != nil {
				return err
			}
		}
		_, err := tx.NewInsert().Model(&row).Exec(ctx)
		return uniqueAsConflict(err, "a session with this id exists")
	})
	if err != nil {
		return fmt.Errorf("create session of user %s: %w", s.UserID, err)
	}
	return nil
}

// Session returns the session with this id hash, or NotFound.
func (db *DB) Session(ctx context.Context, idHash string) (portal.Session, error) {
	var row portalSessionRow
	err := db.bun.NewSelect().Model(&row).Where("id_hash = ?", idHash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return portal.Session{}, pipeline.Errorf(pipeline.NotFound, "session not found")
	}
	if err != nil {
		return portal.Session{}, fmt.Errorf("session: %w", err)
	}
	return row.domain(), nil
}

// TouchSession records a use of the session at at; NotFound when it does
// not exist (any more).
func (db *DB) TouchSession(ctx context.Context, idHash string, at time.Time) error {
	res, err := db.bun.NewUpdate().Model((*portalSessionRow)(nil)).Set("last_seen_at = ?", makoTime(at)).
		Where("id_hash = ?", idHash).Exec(ctx)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			return pipeline.Errorf(pipeline.NotFound, "session not found")
		}
	}
	if err != nil {
		return fmt.Errorf("touch session: %w", busyAsUnavailable(err))
	}
	return nil
}

// DeleteSession deletes the session; deleting an unknown one is no error.
func (db *DB) DeleteSession(ctx context.Context, idHash string) error {
	if _, err := db.bun.NewDelete().Model((*portalSessionRow)(nil)).Where("id_hash = ?", idHash).Exec(ctx); err != nil {
		return fmt.Errorf("delete session: %w", busyAsUnavailable(err))
	}
	return nil
}

// DeleteExpired removes what can no longer be used at now, as
// portal.Session.Alive and the redemption rules decide: sessions whose
// absolute end is not after now or whose last use is not after idleBefore
// (now minus the idle limit), login flows whose expiry is not after now,
// and magic links that expired and were issued at least a day before now:
// expired links stay for a day because the per-address limit of links per
// hour counts them. It returns how many rows it removed.
// magicLinkKeep is how long issued magic links are kept: longer than the
// hour over which the portal limits the links per address.
const magicLinkKeep = 24 * time.Hour

func (db *DB) DeleteExpired(ctx context.Context, now, idleBefore time.Time) (int, error) {
	now, idleBefore = makoTime(now), makoTime(idleBefore)
	total := 0
	err := db.inTx(ctx, func(tx bun.Tx) error {
		total = 0
		for _, q := range []*bun.DeleteQuery{
			tx.NewDelete().Model((*portalSessionRow)(nil)).Where("expires_at <= ? OR last_seen_at <= ?", now, idleBefore),
			tx.NewDelete().Model((*portalMagicLinkRow)(nil)).Where("expires_at <= ? AND created_at <= ?", now, now.Add(-magicLinkKeep)),
			tx.NewDelete().Model((*portalLoginFlowRow)(nil)).Where("expires_at <= ?", now),
		} {
			res, err := q.Exec(ctx)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	return total, nil
}

// CreateMagicLink stores an issued magic link; the address is kept in lower
// case. NotFound when the user does not exist.
func (db *DB) CreateMagicLink(ctx context.Context, m portal.MagicLink) error {
	if m.Hash == "" || m.UserID == "" {
		return pipeline.Errorf(pipeline.Invalid, "create magic link: the hash and the user are required")
	}
	row := portalMagicLinkRow{Hash: m.Hash, UserID: m.UserID, Email: normEmail(m.Email), CreatedAt: makoTime(m.CreatedAt),
		ExpiresAt: makoTime(m.ExpiresAt)}
	if m.UsedAt != nil {
		t := makoTime(*m.UsedAt)
		row.UsedAt = &t
	}
	if _, err := db.bun.NewInsert().Model(&row).Exec(ctx); err != nil {
		return fmt.Errorf("create magic link for user %s: %w", m.UserID,
			busyAsUnavailable(uniqueAsConflict(err, "a magic link with this code exists")))
	}
	return nil
}

// MagicLinksSince counts the links issued to email (compared in lower
// case) at or after since.
func (db *DB) MagicLinksSince(ctx context.Context, email string, since time.Time) (int, error) {
	n, err := db.bun.NewSelect().Model((*portalMagicLinkRow)(nil)).Where("email = ?", normEmail(email)).
		Where("created_at >= ?", makoTime(since)).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count magic links: %w", err)
	}
	return int(n), nil
}

// RedeemMagicLink marks the link used at now and returns it. The mark is
// one conditional UPDATE (unused and not expired at now), so of two
// concurrent redemptions exactly one changes the row and the other finds
// nothing to change. NotFound when the link is unknown, used or expired.
func (db *DB) RedeemMagicLink(ctx context.Context, hash string, now time.Time) (portal.MagicLink, error) {
	now = makoTime(now)
	var row portalMagicLinkRow
	err := db.inTx(ctx, func(tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*portalMagicLinkRow)(nil)).Set("used_at = ?", now).
			Where("hash = ?", hash).Where("used_at IS NULL").Where("expires_at > ?", now).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return pipeline.Errorf(pipeline.NotFound, "the sign-in link is unknown, used or expired")
		}
		return tx.NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx)
	})
	if err != nil {
		return portal.MagicLink{}, fmt.Errorf("redeem magic link: %w", err)
	}
	return row.domain(), nil
}

// CreateLoginFlow stores an SSO sign-in in progress.
func (db *DB) CreateLoginFlow(ctx context.Context, f portal.LoginFlow) error {
	if f.StateHash == "" {
		return pipeline.Errorf(pipeline.Invalid, "create login flow: the state hash is required")
	}
	row := portalLoginFlowRow{StateHash: f.StateHash, BrowserHash: f.BrowserHash, Verifier: f.Verifier, Nonce: f.Nonce,
		Next: f.Next, CreatedAt: makoTime(f.CreatedAt), ExpiresAt: makoTime(f.ExpiresAt)}
	if _, err := db.bun.NewInsert().Model(&row).Exec(ctx); err != nil {
		return fmt.Errorf("create login flow: %w", busyAsUnavailable(uniqueAsConflict(err, "a login flow with this state exists")))
	}
	return nil
}

// TakeLoginFlow deletes the flow with this state hash and returns it, once:
// the caller whose DELETE removed the row gets it, a concurrent one
// NotFound. An expired flow is deleted too and answers NotFound, as does an
// unknown one.
func (db *DB) TakeLoginFlow(ctx context.Context, stateHash string, now time.Time) (portal.LoginFlow, error) {
	var row portalLoginFlowRow
	expired := false
	err := db.inTx(ctx, func(tx bun.Tx) error {
		expired = false
		notFound := pipeline.Errorf(pipeline.NotFound, "the sign-in is unknown, used or expired")
		err := tx.NewSelect().Model(&row).Where("state_hash = ?", stateHash).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound
		}
		if err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*portalLoginFlowRow)(nil)).Where("state_hash = ?", stateHash).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound
		}
		if !now.Before(row.ExpiresAt) {
			// The deletion stands: an expired flow is of no further use.
			expired = true
		}
		return nil
	})
	if err != nil {
		return portal.LoginFlow{}, fmt.Errorf("take login flow: %w", err)
	}
	if expired {
		return portal.LoginFlow{}, pipeline.Errorf(pipeline.NotFound, "the sign-in is unknown, used or expired")
	}
	return portal.LoginFlow{StateHash: row.StateHash, BrowserHash: row.BrowserHash, Verifier: row.Verifier, Nonce: row.Nonce,
		Next: row.Next, CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}, nil
}

// ---- Absences ----

// LeaveRequests lists the employee's leave requests, latest start first
// (start_date, then id, descending).
func (db *DB) LeaveRequests(ctx context.Context, employeeID string) ([]portal.LeaveRequest, error) {
	var rows []portalLeaveRow
	if err := db.bun.NewSelect().Model(&rows).Where("employee_id = ?", employeeID).
		OrderExpr("start_date DESC, id DESC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("leave requests of employee %s: %w", employeeID, err)
	}
	out := make([]portal.LeaveRequest, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.domain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SickLeaves lists the employee's sick-leave reports, latest start first
// (start_date, then id, descending).
func (db *DB) SickLeaves(ctx context.Context, employeeID string) ([]portal.SickLeave, error) {
	var rows []portalSickRow
	if err := db.bun.NewSelect().Model(&rows).Where("employee_id = ?", employeeID).
		OrderExpr("start_date DESC, id DESC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("sick-leave reports of employee %s: %w", employeeID, err)
	}
	out := make([]portal.SickLeave, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.domain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lockEmployee serialises the absence writes of one employee and answers
// NotFound for an unknown one. On PostgreSQL it locks the employee's row
// until the transaction ends, so that the overlap check and the insert of
// one writer happen before the next writer's check; on SQLite every write
// transaction already holds the database's single write lock from BEGIN
// (_txlock=immediate).
func (db *DB) lockEmployee(ctx context.Context, tx bun.Tx, employeeID string) error {
	q := tx.NewSelect().Model((*portalEmployeeRow)(nil)).Column("id").Where("id = ?", employeeID)
	if db.dialect == Postgres {
		q = q.For("UPDATE")
	}
	var id string
	err := q.Scan(ctx, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return pipeline.Errorf(pipeline.NotFound, "employee %s not found", employeeID)
	}
	return err
}

// CreateLeaveRequest stores r with a new id unless it overlaps, by at least
// one day, a leave request or a sick-leave report of the same employee: then
// Conflict naming the overlapped one (the earliest). The check and the
// insert are one transaction serialised per employee (lockEmployee), so two
// concurrent overlapping requests cannot both be stored. A request without
// status is stored as beantragt; CreatedAt is stored as given. NotFound when
// the employee does not exist.
func (db *DB) CreateLeaveRequest(ctx context.Context, r portal.LeaveRequest) (portal.LeaveRequest, error) {
	if err := portal.CheckRange(r.Start, r.End); err != nil {
		return portal.LeaveRequest{}, fmt.Errorf("create leave request: %w", err)
	}
	if _, err := portal.ParseEnum("type", string(r.Type), portal.LeaveTypes); err != nil {
		return portal.LeaveRequest{}, fmt.Errorf("create leave request: %w", err)
	}
	if r.Status == "" {
		r.Status = portal.LeaveRequested
	}
	r.CreatedAt = makoTime(r.CreatedAt)
	row := portalLeaveRow{EmployeeID: r.EmployeeID, Type: string(r.Type), StartDate: r.Start.String(), EndDate: r.End.String(),
		WorkingDays: r.WorkingDays, Comment: r.Comment, Status: string(r.Status), CreatedAt: r.CreatedAt}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		if err := db.lockEmployee(ctx, tx, r.EmployeeID); err != nil {
			return err
		}
		if err := checkOverlap[portalLeaveRow](ctx, tx, "leave request", r.EmployeeID, row.StartDate, row.EndDate); err != nil {
			return err
		}
		if err := checkOverlap[portalSickRow](ctx, tx, "sick-leave report", r.EmployeeID, row.StartDate, row.EndDate); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&row).Returning("id").Exec(ctx)
		return uniqueAsConflict(err, "the leave request was stored twice")
	})
	if err != nil {
		return portal.LeaveRequest{}, fmt.Errorf("create leave request of employee %s: %w", r.EmployeeID, err)
	}
	r.ID = row.ID
	return r, nil
}

// absenceRow is a stored absence: a leave request or a sick-leave report.
type absenceRow interface {
	portalLeaveRow | portalSickRow
	span() (start, end string)
}

func (r portalLeaveRow) span() (string, string) { return r.StartDate, r.EndDate }
func (r portalSickRow) span() (string, string)  { return r.StartDate, r.EndDate }

// checkOverlap answers portal.ConflictError naming the employee's earliest
// absence of kind R (what) that shares a day with start..end, nil when there
// is none. Days are YYYY-MM-DD text, so text comparison orders them.
func checkOverlap[R absenceRow](ctx context.Context, tx bun.Tx, what, employeeID, start, end string) error {
	var rows []R
	if err := tx.NewSelect().Model(&rows).Where("employee_id = ?", employeeID).
		Where("start_date <= ? AND end_date >= ?", end, start).
		OrderExpr("start_date, id").Limit(1).Scan(ctx); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	s, e, err := parseRange(rows[0].span())
	if err != nil {
		return fmt.Errorf("overlapping %s: %w", what, err)
	}
	return portal.ConflictError(what, s, e)
}

// CreateSickLeave stores r with a new id unless it overlaps another
// sick-leave report of the same employee (Conflict naming the earliest).
// Overlapping a leave request is allowed: illness during leave is reported,
// and HR credits the leave days back. Serialised per employee like
// CreateLeaveRequest; NotFound when the employee does not exist.
func (db *DB) CreateSickLeave(ctx context.Context, r portal.SickLeave) (portal.SickLeave, error) {
	if err := portal.CheckRange(r.Start, r.End); err != nil {
		return portal.SickLeave{}, fmt.Errorf("create sick-leave report: %w", err)
	}
	r.CreatedAt = makoTime(r.CreatedAt)
	row := portalSickRow{EmployeeID: r.EmployeeID, StartDate: r.Start.String(), EndDate: r.End.String(),
		Certificate: r.Certificate, Comment: r.Comment, CreatedAt: r.CreatedAt}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		if err := db.lockEmployee(ctx, tx, r.EmployeeID); err != nil {
			return err
		}
		if err := checkOverlap[portalSickRow](ctx, tx, "sick-leave report", r.EmployeeID, row.StartDate, row.EndDate); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&row).Returning("id").Exec(ctx)
		return uniqueAsConflict(err, "the sick-leave report was stored twice")
	})
	if err != nil {
		return portal.SickLeave{}, fmt.Errorf("create sick-leave report of employee %s: %w", r.EmployeeID, err)
	}
	r.ID = row.ID
	return r, nil
}

// ---- Certificates ----

// Certificates lists the employee's certificate requests, newest first
// (created_at, then id, descending).
func (db *DB) Certificates(ctx context.Context, employeeID string) ([]portal.Certificate, error) {
	var rows []portalCertificateRow
	if err := db.bun.NewSelect().Model(&rows).Where("employee_id = ?", employeeID).
		OrderExpr("created_at DESC, id DESC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("certificates of employee %s: %w", employeeID, err)
	}
	out := make([]portal.Certificate, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// Certificate returns the employee's certificate request id; NotFound when
// it does not exist or belongs to another employee, so that an id reveals
// nothing about other employees' requests.
func (db *DB) Certificate(ctx context.Context, employeeID string, id int64) (portal.Certificate, error) {
	var row portalCertificateRow
	err := db.bun.NewSelect().Model(&row).Where("id = ?", id).Where("employee_id = ?", employeeID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return portal.Certificate{}, pipeline.Errorf(pipeline.NotFound, "certificate %d not found", id)
	}
	if err != nil {
		return portal.Certificate{}, fmt.Errorf("certificate %d: %w", id, err)
	}
	return row.domain(), nil
}

// CreateCertificate stores the request c with a new id. A request without
// status is stored as beantragt, one without UpdatedAt as updated when
// created. Invalid for an unknown type or status or a language other than
// de and en; NotFound when the employee does not exist.
func (db *DB) CreateCertificate(ctx context.Context, c portal.Certificate) (portal.Certificate, error) {
	if _, err := portal.ParseEnum("type", string(c.Type), portal.CertificateTypes); err != nil {
		return portal.Certificate{}, fmt.Errorf("create certificate: %w", err)
	}
	if c.Status == "" {
		c.Status = portal.CertRequested
	}
	if _, err := portal.ParseEnum("status", string(c.Status), portal.CertificateStatuses); err != nil {
		return portal.Certificate{}, fmt.Errorf("create certificate: %w", err)
	}
	if _, err := portal.ParseEnum("language", c.Language, []string{"de", "en"}); err != nil {
		return portal.Certificate{}, fmt.Errorf("create certificate: %w", err)
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.CreatedAt, c.UpdatedAt = makoTime(c.CreatedAt), makoTime(c.UpdatedAt)
	row := portalCertificateRow{EmployeeID: c.EmployeeID, Type: string(c.Type), Purpose: c.Purpose, Language: c.Language,
		Status: string(c.Status), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*portalEmployeeRow)(nil)).Where("id = ?", c.EmployeeID).Count(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return pipeline.Errorf(pipeline.NotFound, "employee %s not found", c.EmployeeID)
		}
		_, err = tx.NewInsert().Model(&row).Returning("id").Exec(ctx)
		return uniqueAsConflict(err, "the certificate request was stored twice")
	})
	if err != nil {
		return portal.Certificate{}, fmt.Errorf("create certificate for employee %s: %w", c.EmployeeID, err)
	}
	c.ID = row.ID
	return c, nil
}

// SetCertificateStatus sets the state of certificate request id, updated at
// at, and returns the request; NotFound when it does not exist, Invalid for
// an unknown status.
func (db *DB) SetCertificateStatus(ctx context.Context, id int64, status portal.CertificateStatus, at time.Time) (portal.Certificate, error) {
	if _, err := portal.ParseEnum("status", string(status), portal.CertificateStatuses); err != nil {
		return portal.Certificate{}, fmt.Errorf("set status of certificate %d: %w", id, err)
	}
	var row portalCertificateRow
	err := db.inTx(ctx, func(tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*portalCertificateRow)(nil)).Set("status = ?", string(status)).
			Set("updated_at = ?", makoTime(at)).Where("id = ?", id).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return pipeline.Errorf(pipeline.NotFound, "certificate %d not found", id)
		}
		return tx.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	})
	if err != nil {
		return portal.Certificate{}, fmt.Errorf("set status of certificate %d: %w", id, err)
	}
	return row.domain(), nil
}
