package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Refused requests (401, 403, 429) are answered in full but recorded in the
// audit trail one by one only up to a budget, because their cost is the
// sender's choice: a flood of bad credentials would otherwise be a flood of
// rows. Each client address may have RefusalsPerAddress refusals recorded
// per window (a minute), all addresses together RefusalsTotal; the refusal
// that meets a limit is recorded with a note saying so, and the ones after
// it in the window are counted in schedbridge_audit_refusals_unrecorded_total
// only. Accepted requests never pass through here: every one is recorded.
//
// The address is the connection's peer, never a forwarded-for header that
// the sender writes itself. Behind a reverse proxy every client shares the
// proxy's address; a flood then also mutes the refusals of others (still
// answered, still counted), never an accepted request. IPv6 peers are
// counted by their /64, which one host usually holds whole.

// refusalWindow is the length of a refusal budget's window.
const refusalWindow = time.Minute

// isRefusal reports whether a status is a refusal that the budget covers.
func isRefusal(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusTooManyRequests
}

// refusalVerdict says what becomes of a refusal's audit entry.
type refusalVerdict int

const (
	recordRefusal refusalVerdict = iota // write it as usual
	recordLast                          // write it with the note that a limit is met
	countRefusal                        // write nothing; count it
)

// refusalBudget is the state of the current window. Addresses are only
// tracked while the total budget lasts, so the map holds at most
// RefusalsTotal entries whatever the number of senders.
type refusalBudget struct {
	mu       sync.Mutex
	perAddr  int
	total    int
	start    time.Time
	byAddr   map[netip.Prefix]int
	recorded int
}

func newRefusalBudget(perAddr, total int) *refusalBudget {
	return &refusalBudget{perAddr: perAddr, total: total, byAddr: map[netip.Prefix]int{}}
}

// take decides on one refusal of the peer remoteAddr at now; limit names
// the limit a recordLast refusal met, and until the end of its window.
func (b *refusalBudget) take(remoteAddr string, now time.Time) (v refusalVerdict, limit string, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Before(b.start) || !now.Before(b.start.Add(refusalWindow)) {
		b.start = now.Truncate(refusalWindow)
		b.recorded = 0
		clear(b.byAddr)
	}
	until = b.start.Add(refusalWindow)
	switch {
	case b.recorded > b.total:
		return countRefusal, "", until
	case b.recorded == b.total:
		b.recorded++
		return recordLast, fmt.Sprintf("%d refusals per minute of all clients", b.total), until
	}
	key := peerKey(remoteAddr)
	n := b.byAddr[key]
	switch {
	case n > b.perAddr:
		return countRefusal, "", until
	case n == b.perAddr:
		b.byAddr[key] = n + 1
		b.recorded++
		return recordLast, fmt.Sprintf("%d refusals per minute of the address %s", b.perAddr, key), until
	}
	b.byAddr[key] = n + 1
	b.recorded++
	return recordRefusal, "", until
}

// peerKey is the address a peer is counted by: an IPv4 address, an IPv6
// /64, or for anything unparsable (a test's or a Unix socket's peer) one
// shared key.
func peerKey(remoteAddr string) netip.Prefix {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}
