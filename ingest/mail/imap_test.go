package mail_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/schedbridge/schedbridge/ingest/mail"
	"github.com/schedbridge/schedbridge/ingest/mail/imaptest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// fetched is what one Fetch handed to its callback.
type fetched struct {
	uids []uint32
	ids  []string // Message-IDs, parsed from the raw bodies
	raws [][]byte
}

func fetchAll(t *testing.T, mb *mail.Mailbox, folder string, st mail.FolderState, batch int) (mail.FolderState, fetched) {
	t.Helper()
	var got fetched
	ns, err := mb.Fetch(context.Background(), folder, st.UIDValidity, st.LastUID, batch, func(uid uint32, raw []byte) error {
		m, err := mail.Parse(raw)
		if err != nil {
			return err
		}
		got.uids = append(got.uids, uid)
		got.ids = append(got.ids, m.MessageID)
		got.raws = append(got.raws, raw)
		return nil
	})
	if err != nil {
		t.Fatalf("Fetch %s: %v", folder, err)
	}
	return ns, got
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// lf normalises line ends: maildir stores LF, IMAP sends CRLF.
func lf(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")) }

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func ascending(uids []uint32) bool {
	for i := 1; i < len(uids); i++ {
		if uids[i] <= uids[i-1] {
			return false
		}
	}
	return true
}

func TestIMAPSync(t *testing.T) {
	srv := imaptest.Start(t)
	inbox := map[string][]byte{
		"20260811091530.4711@swm-netz.example": fixture(t, "reply_alternative_qp.eml"),
		"3344-rueckfrage@ortsnetz.example":     fixture(t, "latin1_base64.eml"),
		"crlf-1@netze-bw.example":              fixture(t, "crlf.eml"),
	}
	for _, id := range sorted(slices.Collect(maps.Keys(inbox))) {
		srv.Deliver(t, "INBOX", inbox[id])
	}
	srv.Deliver(t, "Gesendet", fixture(t, "mixed_edi.eml"))

	ctx := context.Background()
	cfg := mail.IMAPConfig{Addr: srv.Addr, Username: srv.User, Password: srv.Password, Security: "none", Timeout: 5 * time.Second}
	mb, err := mail.DialIMAP(ctx, cfg)
	if err != nil {
		t.Fatalf("DialIMAP: %v\n%s", err, srv.Logs())
	}
	defer mb.Close()

	folders, err := mb.Folders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Gesendet", "INBOX"}; !reflect.DeepEqual(folders, want) {
		t.Errorf("Folders = %v, want %v", folders, want)
	}

	// First sync of INBOX, in batches of 2 so that two FETCH commands run.
	st, got := fetchAll(t, mb, "INBOX", mail.FolderState{}, 2)
	if len(got.uids) != 3 || !ascending(got.uids) {
		t.Fatalf("first sync handed UIDs %v, want 3 ascending", got.uids)
	}
	if !reflect.DeepEqual(sorted(got.ids), sorted(slices.Collect(maps.Keys(inbox)))) {
		t.Errorf("first sync handed %v", got.ids)
	}
	for i, id := range got.ids {
		if !bytes.Equal(lf(got.raws[i]), lf(inbox[id])) {
			t.Errorf("body of %s differs from the delivered file", id)
		}
	}
	if st.UIDValidity == 0 || st.LastUID != got.uids[2] {
		t.Errorf("state after first sync = %+v, want LastUID %d and a UIDVALIDITY", st, got.uids[2])
	}
	assertUnseen(t, srv)

	// Nothing new: no callback, same state.
	st2, got := fetchAll(t, mb, "INBOX", st, 2)
	if len(got.uids) != 0 || st2 != st {
		t.Errorf("sync without news handed %v, state %+v -> %+v", got.uids, st, st2)
	}

	// One new mail: only it comes.
	srv.Deliver(t, "INBOX", fixture(t, "html_only.eml"))
	st3, got := fetchAll(t, mb, "INBOX", st, 10)
	if !reflect.DeepEqual(got.ids, []string{"html-only-1@stadtwerke-beispielstadt.example"}) || got.uids[0] <= st.LastUID {
		t.Errorf("incremental sync handed %v %v after UID %d", got.uids, got.ids, st.LastUID)
	}
	if st3.UIDValidity != st.UIDValidity || st3.LastUID != got.uids[0] {
		t.Errorf("state after incremental sync = %+v", st3)
	}

	// The other folder.
	sent, got := fetchAll(t, mb, "Gesendet", mail.FolderState{}, 0)
	if !reflect.DeepEqual(got.ids, []string{"mixed-1@westnetz.example"}) {
		t.Errorf("Gesendet handed %v", got.ids)
	}

	// A folder that does not exist.
	_, err = mb.Fetch(ctx, "Archiv", 0, 0, 10, func(uint32, []byte) error { return nil })
	if pipeline.KindOf(err) != pipeline.NotFound {
		t.Errorf("missing folder: kind %s (%v), want not_found", pipeline.KindOf(err), err)
	}

	// The folder is deleted and created again: its UIDs start over under a
	// new UIDVALIDITY, and the old state must not hide the new mail.
	srv.RemoveFolder(t, "Gesendet")
	srv.Deliver(t, "Gesendet", fixture(t, "crlf.eml"))
	srv.Deliver(t, "Gesendet", fixture(t, "html_only.eml"))
	renewed, got := fetchAll(t, mb, "Gesendet", sent, 10)
	if renewed.UIDValidity == sent.UIDValidity {
		t.Fatalf("UIDVALIDITY stayed %d after recreating the folder", sent.UIDValidity)
	}
	if len(got.uids) != 2 || !ascending(got.uids) || got.uids[0] > sent.LastUID {
		t.Errorf("after the UIDVALIDITY change handed UIDs %v, want both mails from the start (old LastUID %d)", got.uids, sent.LastUID)
	}
	if renewed.LastUID != got.uids[len(got.uids)-1] {
		t.Errorf("state after UIDVALIDITY change = %+v", renewed)
	}
}

// TestIMAPCallbackError: a failing callback stops the sync; the state
// counts only what was accepted, so the next sync retries the failed mail.
func TestIMAPCallbackError(t *testing.T) {
	srv := imaptest.Start(t)
	for _, f := range []string{"crlf.eml", "html_only.eml", "mixed_edi.eml"} {
		srv.Deliver(t, "INBOX", fixture(t, f))
	}
	ctx := context.Background()
	mb, err := mail.DialIMAP(ctx, mail.IMAPConfig{Addr: srv.Addr, Username: srv.User, Password: srv.Password, Security: "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Close()

	boom := errors.New("storage down")
	var seen []uint32
	st, err := mb.Fetch(ctx, "INBOX", 0, 0, 10, func(uid uint32, _ []byte) error {
		if len(seen) == 1 {
			return boom
		}
		seen = append(seen, uid)
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Fetch error = %v, want the callback's", err)
	}
	if len(seen) != 1 || st.LastUID != seen[0] {
		t.Fatalf("state %+v after accepting %v", st, seen)
	}
	st2, got := fetchAll(t, mb, "INBOX", st, 10)
	if len(got.uids) != 2 || got.uids[0] <= seen[0] || st2.LastUID != got.uids[1] {
		t.Errorf("retry handed %v with state %+v", got.uids, st2)
	}
}

func TestIMAPDialErrors(t *testing.T) {
	srv := imaptest.Start(t)
	ctx := context.Background()

	wrong := "Wr0ng-Passw0rd-4711"
	_, err := mail.DialIMAP(ctx, mail.IMAPConfig{Addr: srv.Addr, Username: srv.User, Password: wrong, Security: "none", Timeout: 5 * time.Second})
	if err == nil {
		t.Fatal("login with a wrong password succeeded")
	}
	if k := pipeline.KindOf(err); k != pipeline.Forbidden {
		t.Errorf("wrong password: kind %s, want forbidden (%v)", k, err)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), srv.Password) {
		t.Errorf("error shows a password: %v", err)
	}
	if !strings.Contains(err.Error(), srv.User) {
		t.Errorf("error %q does not name the user", err)
	}

	tests := []struct {
		name string
		cfg  mail.IMAPConfig
		kind pipeline.ErrorKind
	}{
		{"plain text to a remote host", mail.IMAPConfig{Addr: "imap.example.org:143", Username: "u", Password: "p", Security: "none"}, pipeline.Invalid},
		{"unknown security", mail.IMAPConfig{Addr: srv.Addr, Username: "u", Password: "p", Security: "ssl3"}, pipeline.Invalid},
		{"no user", mail.IMAPConfig{Addr: srv.Addr, Password: "p", Security: "none"}, pipeline.Invalid},
		{"nobody listening", mail.IMAPConfig{Addr: "127.0.0.1:1", Username: "u", Password: "p", Security: "none", Timeout: time.Second}, pipeline.Unavailable},
		// Dovecot here speaks no TLS, so the handshake fails.
		{"tls to a plain server", mail.IMAPConfig{Addr: srv.Addr, Username: "u", Password: "p", Security: "tls", Timeout: 2 * time.Second}, pipeline.Unavailable},
		{"starttls not offered", mail.IMAPConfig{Addr: srv.Addr, Username: "u", Password: "p", Security: "starttls", Timeout: 2 * time.Second}, pipeline.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mb, err := mail.DialIMAP(ctx, tt.cfg)
			if err == nil {
				mb.Close()
				t.Fatal("DialIMAP succeeded")
			}
			if k := pipeline.KindOf(err); k != tt.kind {
				t.Errorf("kind %s, want %s (%v)", k, tt.kind, err)
			}
		})
	}
}

// assertUnseen checks with a second client that the sync left every INBOX
// message unread (BODY.PEEK, EXAMINE).
func assertUnseen(t *testing.T, srv *imaptest.Server) {
	t.Helper()
	c, err := imapclient.DialInsecure(srv.Addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(srv.User, srv.Password).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Fetch(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.FetchOptions{Flags: true, UID: true}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 {
		t.Fatal("no messages to check flags of")
	}
	for _, m := range msgs {
		if slices.Contains(m.Flags, imap.FlagSeen) {
			t.Errorf("UID %d is marked \\Seen after the sync", m.UID)
		}
	}
}
