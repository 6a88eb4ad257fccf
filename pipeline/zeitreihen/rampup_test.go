package zeitreihen

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestRampUpView(t *testing.T) {
	stand := time.Date(2026, time.March, 9, 6, 0, 0, 0, time.UTC)
	recv := stand.Add(time.Hour)
	e := func(dso, name, area string, zone pipeline.ControlArea, lb pipeline.Day, p Prognoseart, z Zaehlertyp, n int) Entry {
		return Entry{NetzbetreiberMPID: dso, Netzbetreiber: name, Bilanzierungsgebiet: area, Regelzone: zone,
			Lieferbeginn: lb, Prognoseart: p, Zaehlertyp: z, Anzahl: n}
	}
	feb28 := pipeline.NewDay(2026, time.February, 28)
	apr1 := pipeline.NewDay(2026, time.April, 1)
	s := StoredSnapshot{
		ID: 3,
		Snapshot: Snapshot{Quelle: "hochlauf.py", Stand: stand, Eintraege: []Entry{
			e("D2", "", "A2", pipeline.Amprion, apr1, PrognoseRLM, "LEISTUNGSZAEHLER", 2),
			e("D1", "Netz Eins", "A1", pipeline.TenneT, stichtag, PrognoseSLP, "DREHSTROMZAEHLER", 5),
			e("D1", "", "A1", pipeline.TenneT, feb28, PrognosePauschal, "", 1),
			e("D1", "Netz Eins", "A3", pipeline.TenneT, stichtag.AddDays(1), "", "", 3),
			e("D3", "", "A2", pipeline.Amprion, feb28, PrognoseIMS, "INTELLIGENTES_MESSSYSTEM", 4),
		}},
		ReceivedAt: recv,
	}
	names := map[string]string{"D1": "Registry Eins", "D3": "Registry Drei"}
	got := RampUpView(s, names, stichtag)
	want := View{
		Stand: stand, Quelle: "hochlauf.py", EmpfangenAt: recv, Stichtag: stichtag,
		Eintraege: 5, Summe: 15, Begonnen: 10, Kuenftig: 5,
		Kunden: Customers{SLP: 6, RLM: 2, IMSys: 4, OhneTyp: 3},
		NachNetzbetreiber: []Total{
			{Schluessel: "D1", Name: "Netz Eins", Anzahl: 9, Begonnen: 6, Kunden: Customers{SLP: 6, OhneTyp: 3}},
			{Schluessel: "D2", Anzahl: 2, Kunden: Customers{RLM: 2}},
			{Schluessel: "D3", Name: "Registry Drei", Anzahl: 4, Begonnen: 4, Kunden: Customers{IMSys: 4}},
		},
		NachBilanzierungsgebiet: []Total{
			{Schluessel: "A1", Anzahl: 6, Begonnen: 6, Kunden: Customers{SLP: 6}},
			{Schluessel: "A2", Anzahl: 6, Begonnen: 4, Kunden: Customers{RLM: 2, IMSys: 4}},
			{Schluessel: "A3", Anzahl: 3, Kunden: Customers{OhneTyp: 3}},
		},
		NachRegelzone: []Total{
			{Schluessel: "Amprion", Anzahl: 6, Begonnen: 4, Kunden: Customers{RLM: 2, IMSys: 4}},
			{Schluessel: "TenneT", Anzahl: 9, Begonnen: 6, Kunden: Customers{SLP: 6, OhneTyp: 3}},
		},
		NachLieferbeginnMonat: []Total{
			{Schluessel: "2026-02", Anzahl: 5, Begonnen: 5, Kunden: Customers{SLP: 1, IMSys: 4}},
			{Schluessel: "2026-03", Anzahl: 8, Begonnen: 5, Kunden: Customers{SLP: 5, OhneTyp: 3}},
			{Schluessel: "2026-04", Anzahl: 2, Kunden: Customers{RLM: 2}},
		},
		NachZaehlertyp: []Total{
			{Schluessel: "DREHSTROMZAEHLER", Anzahl: 5, Begonnen: 5, Kunden: Customers{SLP: 5}},
			{Schluessel: "INTELLIGENTES_MESSSYSTEM", Anzahl: 4, Begonnen: 4, Kunden: Customers{IMSys: 4}},
			{Schluessel: "LEISTUNGSZAEHLER", Anzahl: 2, Kunden: Customers{RLM: 2}},
			{Schluessel: "ohne_angabe", Anzahl: 4, Begonnen: 1, Kunden: Customers{SLP: 1, OhneTyp: 3}},
		},
		NachPrognoseart: []Total{
			{Schluessel: "IMS", Anzahl: 4, Begonnen: 4, Kunden: Customers{IMSys: 4}},
			{Schluessel: "PAUSCHAL", Anzahl: 1, Begonnen: 1, Kunden: Customers{SLP: 1}},
			{Schluessel: "RLM", Anzahl: 2, Kunden: Customers{RLM: 2}},
			{Schluessel: "SLP", Anzahl: 5, Begonnen: 5, Kunden: Customers{SLP: 5}},
			{Schluessel: "ohne_angabe", Anzahl: 3, Kunden: Customers{OhneTyp: 3}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("view =\n%s\nwant\n%s", g, w)
	}
}

// TestRampUpViewEmpty checks that an empty snapshot gives empty arrays, not
// null.
func TestRampUpViewEmpty(t *testing.T) {
	v := RampUpView(StoredSnapshot{}, nil, stichtag)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "null") || v.Summe != 0 || v.Eintraege != 0 {
		t.Errorf("empty view = %s", b)
	}
	for _, k := range []string{"nach_netzbetreiber", "nach_bilanzierungsgebiet", "nach_regelzone", "nach_lieferbeginn_monat", "nach_zaehlertyp", "nach_prognoseart"} {
		if !strings.Contains(string(b), `"`+k+`":[]`) {
			t.Errorf("%s not an empty array in %s", k, b)
		}
	}
}
