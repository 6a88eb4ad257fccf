// Package consolebody decodes the bodies of the operators' console: a run
// to start (POST /v1/console/runs) and the inbox files to retry (POST
// /v1/console/inbox/retry).
package consolebody
