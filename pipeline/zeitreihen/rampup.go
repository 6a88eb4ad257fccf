package zeitreihen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schedbridge/schedbridge/pipeline"
)

// ohneAngabe is the grouping key of entries that leave an optional field
// (meter type, forecast type) empty.
const ohneAngabe = "ohne_angabe"

// RampUpView summarises a stored snapshot for GET /v1/process/kundenhochlauf.
// names maps DSO mp_ids to registry names, used where an entry has no
// netzbetreiber name. stichtag splits begonnen (lieferbeginn <= stichtag)
// and kuenftig.
//
// Each grouping is sorted by Schluessel: DSO mp_id, balancing area EIC,
// control area name, supply-start month ("YYYY-MM"), meter type and forecast
// type (ohne_angabe where the entry names none). A DSO's name is the
// snapshot's (the smallest one if its entries disagree, so that the order of
// the entries does not matter), else the registry's.
func RampUpView(s StoredSnapshot, names map[string]string, stichtag pipeline.Day) View {
	v := View{
		Stand:       s.Stand,
		Quelle:      s.Quelle,
		EmpfangenAt: s.ReceivedAt,
		Stichtag:    stichtag,
		Eintraege:   len(s.Eintraege),
	}
	var (
		byDSO    = totals{}
		byArea   = totals{}
		byZone   = totals{}
		byMonth  = totals{}
		byMeter  = totals{}
		byPrg    = totals{}
		dsoNames = map[string]string{}
	)
	for _, e := range s.Eintraege {
		g := e.Prognoseart.Group()
		begun := !stichtag.Before(e.Lieferbeginn)
		v.Summe += e.Anzahl
		if begun {
			v.Begonnen += e.Anzahl
		} else {
			v.Kuenftig += e.Anzahl
		}
		v.Kunden.add(g, e.Anzahl)

		byDSO.add(e.NetzbetreiberMPID, g, e.Anzahl, begun)
		byArea.add(e.Bilanzierungsgebiet, g, e.Anzahl, begun)
		byZone.add(string(e.Regelzone), g, e.Anzahl, begun)
		byMonth.add(fmt.Sprintf("%04d-%02d", e.Lieferbeginn.Year, int(e.Lieferbeginn.Month)), g, e.Anzahl, begun)
		byMeter.add(orOhneAngabe(string(e.Zaehlertyp)), g, e.Anzahl, begun)
		byPrg.add(orOhneAngabe(string(e.Prognoseart)), g, e.Anzahl, begun)
		if e.Netzbetreiber != "" {
			if n, ok := dsoNames[e.NetzbetreiberMPID]; !ok || e.Netzbetreiber < n {
				dsoNames[e.NetzbetreiberMPID] = e.Netzbetreiber
			}
		}
	}
	v.NachNetzbetreiber = byDSO.sorted()
	for i := range v.NachNetzbetreiber {
		t := &v.NachNetzbetreiber[i]
		if n, ok := dsoNames[t.Schluessel]; ok {
			t.Name = n
		} else {
			t.Name = names[t.Schluessel]
		}
	}
	v.NachBilanzierungsgebiet = byArea.sorted()
	v.NachRegelzone = byZone.sorted()
	v.NachLieferbeginnMonat = byMonth.sorted()
	v.NachZaehlertyp = byMeter.sorted()
	v.NachPrognoseart = byPrg.sorted()
	return v
}

func orOhneAngabe(s string) string {
	if s == "" {
		return ohneAngabe
	}
	return s
}

// totals accumulates one grouping of the view.
type totals map[string]*Total

func (ts totals) add(key string, g Group, n int, begun bool) {
	t := ts[key]
	if t == nil {
		t = &Total{Schluessel: key}
		ts[key] = t
	}
	t.Anzahl += n
	if begun {
		t.Begonnen += n
	}
	t.Kunden.add(g, n)
}

func (ts totals) sorted() []Total {
	out := make([]Total, 0, len(ts))
	for _, t := range ts {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(x, y Total) int { return strings.Compare(x.Schluessel, y.Schluessel) })
	return out
}
