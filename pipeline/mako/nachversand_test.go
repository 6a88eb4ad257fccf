package mako

import (
	"encoding/json"
	"reflect"
	"testing"
)

func cellAt(st State, ref, sent, answered string) StreamState {
	c := StreamState{State: st, Ref: ref}
	if sent != "" {
		c.At = ptr(at(sent))
	}
	if answered != "" {
		c.AnsweredAt = ptr(at(answered))
	}
	return c
}

func TestDuePrelistings(t *testing.T) {
	now := at("2026-11-25T09:00:00Z")
	partners := []Partner{
		{MPID: "9900000000033", Name: "Netz Drei"},
		{MPID: "9900000000011", Name: "Netz Eins"},
		{MPID: "9900000000044", Name: "Netz Vier"},
		{MPID: "9900000000022", Name: "Netz Zwei"},
		{MPID: "9900000000055", Name: "Netz ohne Zeile"},
	}
	rows := map[string]OverviewRow{
		"9900000000033": {PartinOut: cellAt(StateMissing, "", "", ""), ZuordnungOut: cellAt(StateSent, "SB30", "2026-11-02T08:00:00Z", "")},
		// Answered 23:30 UTC is the next day in Berlin.
		"9900000000011": {PartinOut: cellAt(StateRejected, "SB11", "2026-11-20T09:00:00Z", "2026-11-20T23:30:00Z"), ZuordnungOut: cellAt(StateMissing, "", "", "")},
		"9900000000044": {PartinOut: cellAt(StateAccepted, "SB40", "2026-11-20T09:00:00Z", "2026-11-20T10:00:00Z"), ZuordnungOut: cellAt(StateAccepted, "SB41", "2026-11-02T08:00:00Z", "")},
		// Without an answer time the rejection is dated by the message.
		"9900000000022": {PartinOut: cellAt(StateOverdue, "SB20", "2026-11-19T10:00:00Z", ""), ZuordnungOut: cellAt(StateRejected, "SB21", "2026-11-18T08:00:00Z", "")},
		// Not in the registry: ignored.
		"9900000000066": {PartinOut: cellAt(StateMissing, "", "", "")},
	}
	want := []Vormerkung{
		{MPID: "9900000000011", Stream: PartinOut, Reason: "PARTIN abgelehnt am 2026-11-21", NotedAt: now, Name: "Netz Eins", Basis: "abgelehnt:SB11"},
		{MPID: "9900000000011", Stream: ZuordnungOut, Reason: "Zuordnungsermächtigung fehlt", NotedAt: now, Name: "Netz Eins", Basis: "fehlt"},
		{MPID: "9900000000022", Stream: PartinOut, Reason: "PARTIN vom 2026-11-19 unbeantwortet", NotedAt: now, Name: "Netz Zwei", Basis: "unbeantwortet:SB20"},
		{MPID: "9900000000022", Stream: ZuordnungOut, Reason: "Zuordnungsermächtigung abgelehnt am 2026-11-18", NotedAt: now, Name: "Netz Zwei", Basis: "abgelehnt:SB21"},
		{MPID: "9900000000033", Stream: PartinOut, Reason: "PARTIN fehlt", NotedAt: now, Name: "Netz Drei", Basis: "fehlt"},
	}
	got := DuePrelistings(partners, rows, now)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DuePrelistings =\n  %+v\nwant\n  %+v", got, want)
	}

	// Nothing due is [] in JSON, not null; a hand-built row without times
	// still yields a sentence.
	if b, _ := json.Marshal(DuePrelistings(partners[2:3], rows, now)); string(b) != "[]" {
		t.Errorf("nothing due = %s, want []", b)
	}
	bare := map[string]OverviewRow{"9900000000011": {PartinOut: StreamState{State: StateRejected}, ZuordnungOut: StreamState{State: StateOverdue}}}
	got = DuePrelistings(partners[1:2], bare, now)
	if len(got) != 2 || got[0].Reason != "PARTIN abgelehnt" || got[1].Reason != "Zuordnungsermächtigung unbeantwortet" {
		t.Errorf("rows without times = %+v", got)
	}
}

func TestDuePrelistingsFromOverview(t *testing.T) {
	// A partner with no facts at all: both send streams fehlen; a green
	// partner: nothing due.
	now := at("2026-11-25T09:00:00Z")
	partners := []Partner{{MPID: "9900000000002", Name: "Grün"}, {MPID: "9900000000001", Name: "Leer"}}
	facts := map[string]PartnerFacts{"9900000000002": factsGreen}
	rows := map[string]OverviewRow{}
	for _, g := range BuildOverview(partners, facts, OverviewOptions{Now: now, Tage: 30}).Groups {
		for _, r := range g.Partners {
			rows[r.MPID] = r
		}
	}
	got := DuePrelistings(partners, rows, now)
	want := []Vormerkung{
		{MPID: "9900000000001", Stream: PartinOut, Reason: "PARTIN fehlt", NotedAt: now, Name: "Leer", Basis: "fehlt"},
		{MPID: "9900000000001", Stream: ZuordnungOut, Reason: "Zuordnungsermächtigung fehlt", NotedAt: now, Name: "Leer", Basis: "fehlt"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DuePrelistings =\n  %+v\nwant\n  %+v", got, want)
	}
	if got[0].Key() != "9900000000001:partin_out" {
		t.Errorf("key = %s", got[0].Key())
	}
}
