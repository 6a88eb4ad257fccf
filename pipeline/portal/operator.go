package portal

import (
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Operator is an entry of the operator list of the web console under
// /console/. Staff sign in to the console through the portal's OpenID
// Connect provider; a signed-in person whose e-mail address is on this list
// is an operator (a group claim of the provider is the other way in). The
// list lives in the service's own database so that it can be kept with
// `schedbridge operator add|remove|list` without access to the provider's
// administration.
//
// The type lives here rather than in package pipeline because its e-mail
// address is normalised with NormalizeEmail, and this package imports
// pipeline.
type Operator struct {
	// Email is the operator's address in lower case, as NormalizeEmail
	// returns it; the console compares the ID token's email claim with it.
	Email string `json:"email"`
	// AddedAt is when the address was put on the list.
	AddedAt time.Time `json:"added_at"`
	// AddedBy says who put it there: "cli" for the command line.
	AddedBy string `json:"added_by"`
}

// NewOperator checks and normalises an entry of the operator list: the
// address must be a bare e-mail address, the time set and the author named.
// Any other input is a pipeline.Invalid error.
func NewOperator(email string, at time.Time, by string) (Operator, error) {
	addr, err := NormalizeEmail(email)
	if err != nil {
		return Operator{}, err
	}
	if at.IsZero() {
		return Operator{}, pipeline.Errorf(pipeline.Invalid, "operator %s: the time it was added is missing", addr)
	}
	by = strings.TrimSpace(by)
	if by == "" {
		return Operator{}, pipeline.Errorf(pipeline.Invalid, "operator %s: who added it is missing", addr)
	}
	return Operator{Email: addr, AddedAt: at.UTC(), AddedBy: by}, nil
}
