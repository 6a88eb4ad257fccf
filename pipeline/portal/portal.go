// Package portal is the domain of the employees' self-service portal: users
// and how they signed in, employee records, absences (leave requests and
// sick-leave reports), certificates and compensation with its visibility
// rules. It holds types and pure rules only; sessions are stored by
// storage/sqldb and served by api/portal.
package portal

import (
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Method is how a session was established.
type Method string

// Login methods.
const (
	MethodSSO       Method = "sso"
	MethodMagicLink Method = "magic_link"
)

// Client is the kind of client a session belongs to. The mobile client signs
// in only through SSO (a native client with PKCE).
type Client string

// Clients.
const (
	ClientWeb    Client = "web"
	ClientMobile Client = "mobile"
)

// Roles a user can hold. HR sets them; a user linked to an employee record
// without explicit roles is an employee, one without a record an applicant.
const (
	RoleEmployee  = "mitarbeiter"
	RoleApplicant = "bewerber"
)

// User is a person who can sign in: staff through SSO (issuer and subject),
// applicants and new hires by magic link to their e-mail address. EmployeeID
// links the user to an employee record; empty means none (the employee
// endpoints answer 404).
type User struct {
	ID         string
	Email      string // lower case
	Name       string
	Roles      []string
	EmployeeID string
	SSOIssuer  string
	SSOSubject string
	// MagicLink allows sign-in by magic link to Email.
	MagicLink bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Employee is an employee record, loaded by HR.
type Employee struct {
	ID         string // Personalnummer
	Name       string
	Email      string // lower case
	Department string
	Position   string
	EntryDate  pipeline.Day
	// State is the federal state (ISO 3166-2 code without "DE-") whose public
	// holidays are not counted as leave days; empty counts national ones.
	State            string
	WeeklyHours      float64
	LeaveDaysPerYear int
	UpdatedAt        time.Time
}

// Visibility of a compensation component, set by HR.
type Visibility string

// Visibilities.
const (
	Visible Visibility = "sichtbar"
	Masked  Visibility = "maskiert"
)

// Interval of a compensation component's amount.
type Interval string

// Intervals.
const (
	Monthly Interval = "monatlich"
	Yearly  Interval = "jaehrlich"
	Once    Interval = "einmalig"
)

// Component is one part of an employee's compensation, in euro cents.
type Component struct {
	Name        string
	AmountCents int64
	Interval    Interval
	Visibility  Visibility
}

// LeaveType is the kind of a leave request.
type LeaveType string

// Leave types.
const (
	Erholungsurlaub LeaveType = "erholungsurlaub"
	Sonderurlaub    LeaveType = "sonderurlaub"
	Unbezahlt       LeaveType = "unbezahlt"
	Bildungsurlaub  LeaveType = "bildungsurlaub"
)

// LeaveTypes lists the leave types in documentation order.
var LeaveTypes = []LeaveType{Erholungsurlaub, Sonderurlaub, Unbezahlt, Bildungsurlaub}

// LeaveStatus is the state of a leave request. The portal creates requests
// as beantragt; approval happens in HR's systems.
type LeaveStatus string

// Leave states.
const (
	LeaveRequested LeaveStatus = "beantragt"
)

// LeaveRequest is a request for leave over whole days.
type LeaveRequest struct {
	ID          int64
	EmployeeID  string
	Type        LeaveType
	Start, End  pipeline.Day // inclusive
	WorkingDays int
	Comment     string
	Status      LeaveStatus
	CreatedAt   time.Time
}

// SickLeave is a sick-leave report over whole days.
type SickLeave struct {
	ID         int64
	EmployeeID string
	Start, End pipeline.Day // inclusive; End is the expected last day
	// Certificate says whether a medical certificate (AU) exists.
	Certificate bool
	Comment     string
	CreatedAt   time.Time
}

// CertificateType is the kind of document an employee requests.
type CertificateType string

// Certificate types.
const (
	Arbeitsbescheinigung    CertificateType = "arbeitsbescheinigung"
	Zwischenzeugnis         CertificateType = "zwischenzeugnis"
	Verdienstbescheinigung  CertificateType = "verdienstbescheinigung"
	Beschaeftigungsnachweis CertificateType = "beschaeftigungsnachweis"
)

// CertificateTypes lists the certificate types in documentation order.
var CertificateTypes = []CertificateType{Arbeitsbescheinigung, Zwischenzeugnis, Verdienstbescheinigung, Beschaeftigungsnachweis}

// CertificateStatus is the state of a certificate request: beantragt, then
// in_bearbeitung, then ausgestellt or abgelehnt (set by HR).
type CertificateStatus string

// Certificate states.
const (
	CertRequested  CertificateStatus = "beantragt"
	CertInProgress CertificateStatus = "in_bearbeitung"
	CertIssued     CertificateStatus = "ausgestellt"
	CertRejected   CertificateStatus = "abgelehnt"
)

// CertificateStatuses lists the states in their order.
var CertificateStatuses = []CertificateStatus{CertRequested, CertInProgress, CertIssued, CertRejected}

// Certificate is a requested certificate and its state.
type Certificate struct {
	ID         int64
	EmployeeID string
	Type       CertificateType
	Purpose    string
	Language   string // "de" or "en"
	Status     CertificateStatus
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Session is a signed-in session. Only hashes of the session id and of the
// CSRF token are stored.
type Session struct {
	IDHash     string
	CSRFHash   string
	UserID     string
	Method     Method
	Client     Client
	CreatedAt  time.Time
	LastSeenAt time.Time
	// ExpiresAt is the absolute end, CreatedAt plus the absolute lifetime.
	ExpiresAt time.Time
	// OperatorClaim records that the identity provider asserted, at this
	// sign-in, a group that makes the person an operator of the web console.
	// It is decided once per session, so that a group removed at the
	// provider takes effect at the next sign-in at the latest.
	OperatorClaim bool
}

// Alive reports whether s may still be used at now: before its absolute end
// and within idle of its last use.
func (s Session) Alive(now time.Time, idle time.Duration) bool {
	return now.Before(s.ExpiresAt) && now.Before(s.LastSeenAt.Add(idle))
}

// MagicLink is an issued sign-in link; only the hash of its code is stored.
type MagicLink struct {
	Hash      string
	UserID    string
	Email     string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// LoginFlow is an SSO sign-in in progress (web): the hash of its state, the
// hash of the browser-binding cookie, the PKCE verifier and the nonce. It is
// used once and expires after minutes.
type LoginFlow struct {
	StateHash   string
	BrowserHash string
	Verifier    string
	Nonce       string
	// Next is the local path the browser returns to after the sign-in: a
	// page of the portal or of the operators' console.
	Next      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

var employeeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)

// ValidEmployeeID reports whether id is a well-formed Personalnummer: 1 to 32
// letters, digits, dots, dashes or underscores, starting with a letter or digit.
func ValidEmployeeID(id string) bool { return employeeID.MatchString(id) }

// NormalizeEmail checks a bare e-mail address and returns it in lower case.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return "", pipeline.Errorf(pipeline.Invalid, "%q is not an e-mail address", s)
	}
	return strings.ToLower(s), nil
}

// MaxAbsenceDays caps one leave request or sick-leave report.
const MaxAbsenceDays = 366

// CheckRange validates an inclusive day range of an absence.
func CheckRange(start, end pipeline.Day) error {
	if end.Before(start) {
		return pipeline.Errorf(pipeline.Invalid, "end_date %s is before start_date %s", end, start)
	}
	if n := daysBetween(start, end) + 1; n > MaxAbsenceDays {
		return pipeline.Errorf(pipeline.Invalid, "an absence spans at most %d days, got %d", MaxAbsenceDays, n)
	}
	return nil
}

func daysBetween(a, b pipeline.Day) int {
	ta := time.Date(a.Year, a.Month, a.Dom, 0, 0, 0, 0, time.UTC)
	tb := time.Date(b.Year, b.Month, b.Dom, 0, 0, 0, 0, time.UTC)
	return int(tb.Sub(ta).Hours() / 24)
}

// Overlaps reports whether the inclusive ranges [a1, a2] and [b1, b2] share a day.
func Overlaps(a1, a2, b1, b2 pipeline.Day) bool {
	return !a2.Before(b1) && !b2.Before(a1)
}

// ConflictError names the absence a new one overlaps.
func ConflictError(what string, start, end pipeline.Day) error {
	return pipeline.Errorf(pipeline.Conflict, "overlaps the %s from %s to %s", what, start, end)
}

// ParseEnum returns v when it is one of allowed, else an Invalid error that
// lists them.
func ParseEnum[T ~string](field, v string, allowed []T) (T, error) {
	for _, a := range allowed {
		if string(a) == v {
			return a, nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return "", pipeline.Errorf(pipeline.Invalid, "%s must be one of %s, got %q", field, strings.Join(names, ", "), v)
}

// FormatCents renders euro cents as a decimal string with two places ("5200.00").
func FormatCents(c int64) string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}
