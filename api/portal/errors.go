package portal

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/pipeline"
)

// statusOf is the portal's table from the error vocabulary to status codes.
// The portal contract allows exactly 200, 201, 400, 401, 403, 404, 409 and
// 500, so kinds the bridge answers otherwise fold into these: an oversized
// body is a malformed one (400), and an unavailable database or identity
// provider is a server error (500). A request whose client went away gets the
// bridge's 499: nobody reads it, so it breaks no contract, and it keeps the
// request out of the server errors in logs and metrics.
var statusOf = map[pipeline.ErrorKind]int{
	pipeline.Invalid:      http.StatusBadRequest,
	pipeline.TooLarge:     http.StatusBadRequest,
	pipeline.Unauthorized: http.StatusUnauthorized,
	pipeline.Forbidden:    http.StatusForbidden,
	pipeline.NotFound:     http.StatusNotFound,
	pipeline.Conflict:     http.StatusConflict,
	pipeline.RateLimited:  http.StatusForbidden,
	pipeline.Unavailable:  http.StatusInternalServerError,
	pipeline.Internal:     http.StatusInternalServerError,
	pipeline.TooSlow:      http.StatusBadRequest,
	pipeline.Canceled:     499,
}

// codeOf names the error in the body, one stable code per status.
var codeOf = map[pipeline.ErrorKind]string{
	pipeline.Invalid:      "invalid",
	pipeline.TooLarge:     "invalid",
	pipeline.Unauthorized: "unauthenticated",
	pipeline.Forbidden:    "forbidden",
	pipeline.RateLimited:  "forbidden",
	pipeline.NotFound:     "not_found",
	pipeline.Conflict:     "conflict",
	pipeline.Unavailable:  "internal",
	pipeline.Internal:     "internal",
	pipeline.TooSlow:      "invalid",
	pipeline.Canceled:     "client_closed",
}

// errorBody is the portal's error body: a stable code, a message for people
// and, for a malformed field, its name.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// fieldError is a malformed field of a body or a parameter.
type fieldError struct {
	field, msg string
}

func (e *fieldError) Error() string            { return e.field + ": " + e.msg }
func (e *fieldError) Kind() pipeline.ErrorKind { return pipeline.Invalid }

func invalid(field, msg string) error { return &fieldError{field: field, msg: msg} }

// fail answers err with the portal table. Server errors are logged with the
// route pattern, never with the URL, the body or a cookie.
func fail(c *gin.Context, log *slog.Logger, err error) {
	err = pipeline.Attribute(c.Request.Context(), err)
	kind := pipeline.KindOf(err)
	body := errorBody{Error: codeOf[kind], Message: pipeline.MessageOf(err)}
	var fe *fieldError
	if errors.As(err, &fe) {
		body.Message, body.Field = fe.Error(), fe.field
	}
	status := statusOf[kind]
	if status == 0 {
		status, body.Error = http.StatusInternalServerError, "internal"
	}
	if status == http.StatusInternalServerError {
		body.Message = "internal error"
		if log != nil {
			log.ErrorContext(c.Request.Context(), "portal request failed", slog.String("route", c.FullPath()), slog.Any("err", err))
		}
	}
	c.AbortWithStatusJSON(status, body)
}

func (h *Handler) fail(c *gin.Context, err error) { fail(c, h.log, err) }
