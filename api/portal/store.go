package portal

import (
	"context"
	"time"

	"github.com/schedbridge/schedbridge/pipeline/portal"
)

// Users finds and links the people who can sign in.
type Users interface {
	// UserByID, UserBySSO and UserByEmail answer pipeline.NotFound when
	// there is no such user. Emails are compared in lower case.
	UserByID(ctx context.Context, id string) (portal.User, error)
	UserBySSO(ctx context.Context, issuer, subject string) (portal.User, error)
	UserByEmail(ctx context.Context, email string) (portal.User, error)
	// LinkSSO records issuer and subject on a user that has none yet;
	// pipeline.Conflict when the user is linked to another subject or the
	// subject to another user.
	LinkSSO(ctx context.Context, userID, issuer, subject string, at time.Time) error
	// CreateUser stores a new user (ID set by the caller); pipeline.Conflict
	// when the e-mail address or the SSO subject is taken.
	CreateUser(ctx context.Context, u portal.User) error
}

// Employees reads employee records and their compensation.
type Employees interface {
	// Employee answers pipeline.NotFound for an unknown id.
	Employee(ctx context.Context, id string) (portal.Employee, error)
	Compensation(ctx context.Context, employeeID string) ([]portal.Component, error)
}

// Sessions stores sessions, magic links and SSO sign-ins in progress.
type Sessions interface {
	// CreateSession stores s and, in the same transaction, deletes the
	// session whose id hash is replaces (may be empty): the rotation at login.
	CreateSession(ctx context.Context, s portal.Session, replaces string) error
	// Session answers pipeline.NotFound for an unknown id hash.
	Session(ctx context.Context, idHash string) (portal.Session, error)
	TouchSession(ctx context.Context, idHash string, at time.Time) error
	// DeleteSession is idempotent: deleting an unknown session is no error.
	DeleteSession(ctx context.Context, idHash string) error
	// DeleteExpiredSessions removes sessions, magic links and login flows that
	// can no longer be used at now: sessions past their absolute end or idle
	// since before idleBefore.
	DeleteExpired(ctx context.Context, now, idleBefore time.Time) (int, error)

	CreateMagicLink(ctx context.Context, m portal.MagicLink) error
	// MagicLinksSince counts the links issued to email at or after since.
	MagicLinksSince(ctx context.Context, email string, since time.Time) (int, error)
	// RedeemMagicLink marks the link with this hash used at now and returns
	// it, atomically, so that two concurrent redemptions cannot both succeed.
	// pipeline.NotFound when unknown, already used or expired at now.
	RedeemMagicLink(ctx context.Context, hash string, now time.Time) (portal.MagicLink, error)

	CreateLoginFlow(ctx context.Context, f portal.LoginFlow) error
	// TakeLoginFlow deletes and returns the flow with this state hash;
	// pipeline.NotFound when unknown or expired at now.
	TakeLoginFlow(ctx context.Context, stateHash string, now time.Time) (portal.LoginFlow, error)
}

// Absences stores leave requests and sick-leave reports.
type Absences interface {
	LeaveRequests(ctx context.Context, employeeID string) ([]portal.LeaveRequest, error)
	// CreateLeaveRequest stores r (ID and CreatedAt set by the store, r.CreatedAt
	// as given) unless it overlaps a leave request or a sick-leave report of
	// the same employee: then pipeline.Conflict naming the overlapped one. The
	// check and the insert are one transaction, serialised per employee.
	CreateLeaveRequest(ctx context.Context, r portal.LeaveRequest) (portal.LeaveRequest, error)
	SickLeaves(ctx context.Context, employeeID string) ([]portal.SickLeave, error)
	// CreateSickLeave stores r unless it overlaps another sick-leave report
	// (pipeline.Conflict). Overlapping a leave request is allowed: illness
	// during leave is reported, and the leave days are credited back by HR.
	CreateSickLeave(ctx context.Context, r portal.SickLeave) (portal.SickLeave, error)
}

// Certificates stores certificate requests.
type Certificates interface {
	Certificates(ctx context.Context, employeeID string) ([]portal.Certificate, error)
	// Certificate answers pipeline.NotFound when id does not exist or belongs
	// to another employee.
	Certificate(ctx context.Context, employeeID string, id int64) (portal.Certificate, error)
	CreateCertificate(ctx context.Context, c portal.Certificate) (portal.Certificate, error)
}

// Store is everything the portal needs from its database.
type Store interface {
	Users
	Employees
	Sessions
	Absences
	Certificates
}
