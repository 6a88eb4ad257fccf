package api

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// statusClientClosed is the status of a request whose client went away
// before the answer (nginx's 499 "client closed request"). No client ever
// reads it; it tells logs and metrics that the request failed for the
// client's leaving, not for a fault of the server.
const statusClientClosed = 499

// statusOf is the one table from the error vocabulary to HTTP status codes.
var statusOf = map[pipeline.ErrorKind]int{
	pipeline.Invalid:      http.StatusUnprocessableEntity,
	pipeline.NotFound:     http.StatusNotFound,
	pipeline.Conflict:     http.StatusConflict,
	pipeline.Forbidden:    http.StatusForbidden,
	pipeline.Unauthorized: http.StatusUnauthorized,
	pipeline.TooLarge:     http.StatusRequestEntityTooLarge,
	pipeline.RateLimited:  http.StatusTooManyRequests,
	pipeline.Unavailable:  http.StatusServiceUnavailable,
	pipeline.Internal:     http.StatusInternalServerError,
	pipeline.TooSlow:      http.StatusRequestTimeout,
	pipeline.Canceled:     statusClientClosed,
}

// outcomeOf names a request in the audit trail when the handler did not:
// reads and refused requests.
var outcomeOf = map[int]string{
	http.StatusOK:                    "ok",
	http.StatusNotFound:              "not_found",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusRequestEntityTooLarge: "too_large",
	http.StatusUnprocessableEntity:   "rejected",
	http.StatusTooManyRequests:       "rate_limited",
	http.StatusServiceUnavailable:    "unavailable",
	http.StatusInternalServerError:   "error",
	http.StatusRequestTimeout:        "too_slow",
	statusClientClosed:               "client_closed",
}

// fail renders err and aborts the request. Validation errors keep the shapes
// FastAPI clients know: a list of problems for schema failures, the first
// message plus all messages for business failures; everything else is
// {"detail": "..."}. A failure that follows the client's going away is
// answered (to nobody) with 499, and not logged as an error.
func (s *Server) fail(c *gin.Context, err error) {
	err = pipeline.Attribute(c.Request.Context(), err)
	var se *ingest.SchemaError
	var be *ingest.BusinessError
	switch {
	case errors.As(err, &se):
		c.AbortWithStatusJSON(http.StatusUnprocessableEntity, gin.H{"detail": se.Problems})
	case errors.As(err, &be):
		c.AbortWithStatusJSON(http.StatusUnprocessableEntity, gin.H{
			"detail": be.Messages[0], "errors": be.Messages, "error_count": be.Total,
		})
	default:
		kind := pipeline.KindOf(err)
		status := statusOf[kind]
		switch kind {
		case pipeline.Unavailable:
			c.Header("Retry-After", s.retryAfter())
		case pipeline.TooSlow:
			// The rest of the body is still on its way; the connection
			// cannot carry another request, and net/http closes it.
			c.Header("Connection", "close")
		}
		// RFC 9110 asks every 401 to carry a challenge; the authentication
		// middleware sets the specific ones of RFC 6750.
		if kind == pipeline.Unauthorized && c.Writer.Header().Get("WWW-Authenticate") == "" {
			c.Header("WWW-Authenticate", challengePlain)
		}
		if kind == pipeline.Internal {
			s.log.ErrorContext(c.Request.Context(), "request failed", slog.String("route", c.FullPath()), slog.Any("err", err))
		}
		c.AbortWithStatusJSON(status, gin.H{"detail": pipeline.MessageOf(err)})
	}
	if c.Writer.Status() >= 400 {
		setAuditDetail(c, err)
	}
}

// firstMessage is the text the audit trail keeps for a validation failure.
func firstMessage(err error) string {
	var se *ingest.SchemaError
	var be *ingest.BusinessError
	switch {
	case errors.As(err, &se) && len(se.Problems) > 0:
		return se.Problems[0].Msg
	case errors.As(err, &be) && len(be.Messages) > 0:
		return be.Messages[0]
	}
	return ""
}
