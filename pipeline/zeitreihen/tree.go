package zeitreihen

import (
	"cmp"
	"slices"

	"github.com/schedbridge/schedbridge/pipeline"
)

// BuildTree builds the activation tree (/zeitreihen/aktivierungen) as of
// in.Stichtag. It is read-only and deterministic: it neither modifies nor
// aliases its input, and the order of the input slices does not change the
// result.
//
// A cell is one series, keyed by market role, DSO, balancing area, contract
// and series type. A cell exists when the snapshot expects it or when
// activation records exist for it.
//
// Expected cells: every snapshot entry of customer group g expects, towards
// every role of in.Rules.Roles, every series type of in.Rules.Types[g] (none
// for GroupOhneTyp, whatever the rules say, since no type can be derived for
// those customers) for every contract of its control area: in.Contracts of
// the entry's Regelzone, in.DefaultContracts where that list is empty, and
// the contract "" where both are empty, so that a missing contract shows as
// a node rather than hiding the customers. A cell's BenoetigtAb is the
// earliest Lieferbeginn of the entries expecting it and its Kunden their
// summed Anzahl. Every (role, DSO, area, contract) of a snapshot entry is a
// node even when it expects no series (customers without a forecast type),
// so that those customers are counted.
//
// Activation state on the key day D: of the cell's records with
// GueltigAb <= D the one with the latest GueltigAb decides, ties broken by
// the later ReceivedAt and then by Quelle (a DSO's UTILMD message beats our
// own import). A deciding activation is active while GueltigBis is nil or
// D < GueltigBis, and deactivated from GueltigBis on; a deciding
// deactivation deactivates from its GueltigAb and the last activation before
// it fills AktivAb/AktivBis. When all records lie after D the cell is
// pending: AktivAb/AktivBis show the earliest future activation. A cell with
// only future deactivations counts as deactivated from the earliest of them.
//
// Zustand: expected and active is aktiv; expected and not active is fehlt
// once BenoetigtAb <= D, erwartet before; not expected and active or pending
// is unerwartet; not expected and deactivated is deaktiviert.
//
// Aggregates: an area node's Kunden are all snapshot entries of its DSO and
// area by group, whatever their supply start; a contract node carries its
// area's Kunden; a role node sums its area nodes; the root sums the distinct
// areas below it, so customers are not counted once per role. Zaehler counts
// cells by Zustand, summed upward. Vertraege are the sorted distinct
// contracts below a node, without "".
//
// Filter: Netzbetreiber, Bilanzierungsgebiet, Regelzone (of the area node,
// "" when no snapshot entry names it) and Marktrolle keep only matching
// nodes; Zustand keeps only cells in that state and drops the nodes left
// without cells. Counts and customers cover only what remains. Role nodes of
// in.Rules.Roles stay, possibly empty, unless the Zustand filter is set;
// role nodes of other roles (seen only in records) appear only with areas.
//
// Order: roles as in in.Rules.Roles, then other roles by name; areas by DSO
// mp_id and balancing area; contracts by name; cells in the order of
// SeriesTypes, unknown types after them by name. All slices are non-nil.
func BuildTree(in Input) Tree {
	b := newTreeBuilder(in)
	b.addSnapshot()
	b.addActivations()
	return b.tree()
}

// areaKey is a DSO's balancing area.
type areaKey struct {
	dso, area string
}

// nodeKey is a contract node: a contract at a DSO and area, towards a role.
type nodeKey struct {
	role Role
	areaKey
	contract string
}

// needKey is a series that the snapshot needs, for every role.
type needKey struct {
	areaKey
	contract string
	typ      SeriesType
}

// need is what the snapshot entries expecting one series add up to.
type need struct {
	ab     pipeline.Day
	kunden int
}

// areaInfo is what the snapshot says about one DSO's balancing area.
type areaInfo struct {
	regelzone pipeline.ControlArea
	kunden    Customers
}

// cellAcc collects one cell's expectation and records.
type cellAcc struct {
	typ  SeriesType
	need *need
	recs []int // indexes into Input.Activations
}

// nodeAcc collects the cells of a contract node. A node has a handful of
// cells at most, so a slice beats a map keyed by the whole cell.
type nodeAcc struct {
	cells []*cellAcc
}

func (n *nodeAcc) cell(t SeriesType) *cellAcc {
	for _, c := range n.cells {
		if c.typ == t {
			return c
		}
	}
	c := &cellAcc{typ: t}
	n.cells = append(n.cells, c)
	return c
}

type treeBuilder struct {
	in        Input
	roles     []Role // in.Rules.Roles without duplicates
	areas     map[areaKey]*areaInfo
	dsoNames  map[string]string
	nodes     map[nodeKey]*nodeAcc
	roleRank  map[Role]int
	typesByGr map[Group][]SeriesType
}

func newTreeBuilder(in Input) *treeBuilder {
	b := &treeBuilder{
		in:        in,
		areas:     map[areaKey]*areaInfo{},
		dsoNames:  map[string]string{},
		nodes:     map[nodeKey]*nodeAcc{},
		roleRank:  map[Role]int{},
		typesByGr: map[Group][]SeriesType{},
	}
	for _, r := range in.Rules.Roles {
		if _, ok := b.roleRank[r]; !ok {
			b.roleRank[r] = len(b.roles)
			b.roles = append(b.roles, r)
		}
	}
	// Duplicate types in the rules would count the same customers twice.
	for g, ts := range in.Rules.Types {
		if g == GroupOhneTyp {
			continue
		}
		var uniq []SeriesType
		for _, t := range ts {
			if !slices.Contains(uniq, t) {
				uniq = append(uniq, t)
			}
		}
		b.typesByGr[g] = uniq
	}
	return b
}

// contractsFor returns the contracts that customers in a control area
// belong to, without duplicates; [""] when none is configured.
func (b *treeBuilder) contractsFor(ca pipeline.ControlArea) []string {
	cs := b.in.Contracts[ca]
	if len(cs) == 0 {
		cs = b.in.DefaultContracts
	}
	if len(cs) == 0 {
		return []string{""}
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// addSnapshot records the areas, customers and expected cells of the
// snapshot.
func (b *treeBuilder) addSnapshot() {
	if b.in.Snapshot == nil {
		return
	}
	needs := map[needKey]*need{}
	structural := map[areaKey]map[string]bool{}
	for _, e := range b.in.Snapshot.Eintraege {
		ak := areaKey{e.NetzbetreiberMPID, e.Bilanzierungsgebiet}
		ai := b.areas[ak]
		if ai == nil {
			ai = &areaInfo{regelzone: e.Regelzone}
			b.areas[ak] = ai
			structural[ak] = map[string]bool{}
		}
		// An area should lie in one control area; if the entries disagree,
		// the smallest non-empty name wins so that the result does not
		// depend on the entries' order.
		if e.Regelzone != "" && (ai.regelzone == "" || e.Regelzone < ai.regelzone) {
			ai.regelzone = e.Regelzone
		}
		g := e.Prognoseart.Group()
		ai.kunden.add(g, e.Anzahl)
		if e.Netzbetreiber != "" {
			if n, ok := b.dsoNames[e.NetzbetreiberMPID]; !ok || e.Netzbetreiber < n {
				b.dsoNames[e.NetzbetreiberMPID] = e.Netzbetreiber
			}
		}
		for _, c := range b.contractsFor(e.Regelzone) {
			structural[ak][c] = true
			for _, t := range b.typesByGr[g] {
				nk := needKey{ak, c, t}
				n := needs[nk]
				if n == nil {
					n = &need{ab: e.Lieferbeginn}
					needs[nk] = n
				} else if e.Lieferbeginn.Before(n.ab) {
					n.ab = e.Lieferbeginn
				}
				n.kunden += e.Anzahl
			}
		}
	}
	for _, r := range b.roles {
		for ak, cs := range structural {
			for c := range cs {
				b.node(nodeKey{r, ak, c})
			}
		}
		for nk, n := range needs {
			b.node(nodeKey{r, nk.areaKey, nk.contract}).cell(nk.typ).need = n
		}
	}
}

// addActivations files the activation records under their cells.
func (b *treeBuilder) addActivations() {
	for i, a := range b.in.Activations {
		nk := nodeKey{a.Marktrolle, areaKey{a.NetzbetreiberMPID, a.Bilanzierungsgebiet}, a.Bilanzkreis}
		c := b.node(nk).cell(a.Zeitreihentyp)
		c.recs = append(c.recs, i)
	}
}

func (b *treeBuilder) node(k nodeKey) *nodeAcc {
	n := b.nodes[k]
	if n == nil {
		n = &nodeAcc{}
		b.nodes[k] = n
	}
	return n
}

// keep applies the node filters (all but Zustand).
func (b *treeBuilder) keep(k nodeKey) bool {
	f := b.in.Filter
	switch {
	case f.Marktrolle != "" && k.role != f.Marktrolle,
		f.Netzbetreiber != "" && k.dso != f.Netzbetreiber,
		f.Bilanzierungsgebiet != "" && k.area != f.Bilanzierungsgebiet:
		return false
	}
	return f.Regelzone == "" || b.regelzone(k.areaKey) == f.Regelzone
}

func (b *treeBuilder) regelzone(ak areaKey) pipeline.ControlArea {
	if ai := b.areas[ak]; ai != nil {
		return ai.regelzone
	}
	return ""
}

func (b *treeBuilder) kunden(ak areaKey) Customers {
	if ai := b.areas[ak]; ai != nil {
		return ai.kunden
	}
	return Customers{}
}

func (b *treeBuilder) name(dso string) string {
	if n, ok := b.dsoNames[dso]; ok {
		return n
	}
	return b.in.Names[dso]
}

// compareTypes orders series types as SeriesTypes, unknown ones after them
// by name.
func compareTypes(x, y SeriesType) int {
	rank := func(t SeriesType) int {
		if i := slices.Index(SeriesTypes, t); i >= 0 {
			return i
		}
		return len(SeriesTypes)
	}
	return cmp.Or(cmp.Compare(rank(x), rank(y)), cmp.Compare(x, y))
}

// nodeRef is a contract node with its role's rank, for sorting.
type nodeRef struct {
	nodeKey
	rank int // position in the configured roles, len(roles) for others
	acc  *nodeAcc
}

func compareNodeRefs(x, y nodeRef) int {
	return cmp.Or(
		cmp.Compare(x.rank, y.rank), cmp.Compare(x.role, y.role),
		cmp.Compare(x.dso, y.dso), cmp.Compare(x.area, y.area), cmp.Compare(x.contract, y.contract),
	)
}

// tree evaluates the kept cells and assembles the nodes.
func (b *treeBuilder) tree() Tree {
	keys := make([]nodeRef, 0, len(b.nodes))
	for k, acc := range b.nodes {
		if b.keep(k) {
			rank, ok := b.roleRank[k.role]
			if !ok {
				rank = len(b.roles)
			}
			keys = append(keys, nodeRef{k, rank, acc})
		}
	}
	slices.SortFunc(keys, compareNodeRefs)

	zustand := b.in.Filter.Zustand
	t := Tree{Knoten: []RoleNode{}}
	roots := map[areaKey]bool{}
	var roleNodes []RoleNode

	// Configured roles are nodes even without areas, so that an empty tree
	// still shows which roles it expects.
	if zustand == "" {
		for _, r := range b.roles {
			if b.in.Filter.Marktrolle == "" || r == b.in.Filter.Marktrolle {
				roleNodes = append(roleNodes, newRoleNode(r))
			}
		}
	}
	roleNode := func(r Role) *RoleNode {
		i := slices.IndexFunc(roleNodes, func(n RoleNode) bool { return n.Marktrolle == r })
		if i < 0 {
			roleNodes = append(roleNodes, newRoleNode(r))
			i = len(roleNodes) - 1
		}
		return &roleNodes[i]
	}

	for i := 0; i < len(keys); {
		// keys[i:j] are the contract nodes of one role and area.
		j := i + 1
		for j < len(keys) && keys[j].role == keys[i].role && keys[j].areaKey == keys[i].areaKey {
			j++
		}
		k := keys[i]
		area := AreaNode{
			NetzbetreiberMPID:   k.dso,
			Netzbetreiber:       b.name(k.dso),
			Bilanzierungsgebiet: k.area,
			Regelzone:           b.regelzone(k.areaKey),
			Vertraege:           []string{},
			Kunden:              b.kunden(k.areaKey),
			Knoten:              []ContractNode{},
		}
		for _, nk := range keys[i:j] {
			cn := b.contractNode(nk.nodeKey, nk.acc, area.Kunden, zustand)
			if zustand != "" && len(cn.Zeitreihen) == 0 {
				continue
			}
			area.Zaehler.add(cn.Zaehler)
			if nk.contract != "" {
				area.Vertraege = append(area.Vertraege, nk.contract)
			}
			area.Knoten = append(area.Knoten, cn)
		}
		i = j
		if zustand != "" && len(area.Knoten) == 0 {
			continue
		}
		rn := roleNode(k.role)
		rn.Zaehler.add(area.Zaehler)
		rn.Kunden.addAll(area.Kunden)
		rn.Vertraege = append(rn.Vertraege, area.Vertraege...)
		rn.Knoten = append(rn.Knoten, area)
		if !roots[k.areaKey] {
			roots[k.areaKey] = true
			t.Kunden.addAll(area.Kunden)
		}
	}

	// roleNodes are in role order: the configured ones were created up
	// front or in key order, the others after them in key order.
	var all []string
	for _, rn := range roleNodes {
		rn.Vertraege = sortedUnique(rn.Vertraege)
		t.Zaehler.add(rn.Zaehler)
		all = append(all, rn.Vertraege...)
		t.Knoten = append(t.Knoten, rn)
	}
	t.Vertraege = sortedUnique(all)
	return t
}

func newRoleNode(r Role) RoleNode {
	return RoleNode{Marktrolle: r, Vertraege: []string{}, Knoten: []AreaNode{}}
}

// contractNode evaluates the cells of one contract node, keeping only those
// in state zustand when it is set.
func (b *treeBuilder) contractNode(nk nodeKey, n *nodeAcc, kunden Customers, zustand State) ContractNode {
	cn := ContractNode{Vertrag: nk.contract, Vertraege: []string{}, Kunden: kunden, Zeitreihen: make([]Cell, 0, len(n.cells))}
	if nk.contract != "" {
		cn.Vertraege = append(cn.Vertraege, nk.contract)
	}
	// The accumulator is the builder's own, so it may be sorted in place.
	slices.SortFunc(n.cells, func(x, y *cellAcc) int { return compareTypes(x.typ, y.typ) })
	for _, acc := range n.cells {
		c := b.evaluate(acc)
		if zustand != "" && c.Zustand != zustand {
			continue
		}
		cn.Zaehler.inc(c.Zustand)
		cn.Zeitreihen = append(cn.Zeitreihen, c)
	}
	return cn
}

// activity is a cell's activation state on the key day.
type activity int

const (
	inactive    activity = iota // no records
	active                      // an activation is in force
	deactivated                 // a deactivation or the end of an activation took effect
	pending                     // only records after the key day
)

// evaluate decides a cell's activation state and Zustand.
func (b *treeBuilder) evaluate(acc *cellAcc) Cell {
	d := b.in.Stichtag
	c := Cell{Zeitreihentyp: acc.typ}
	state := b.decide(acc.recs, &c)
	expected := acc.need != nil
	if expected {
		c.BenoetigtAb = dayPtr(acc.need.ab)
		c.Kunden = acc.need.kunden
	}
	switch {
	case expected && state == active:
		c.Zustand = Aktiv
	case expected && d.Before(acc.need.ab):
		c.Zustand = Erwartet
	case expected:
		c.Zustand = Fehlt
	case state == active, state == pending:
		c.Zustand = Unerwartet
	default:
		// Cells exist only when expected or with records, so an unexpected
		// cell that is neither active nor pending is deactivated.
		c.Zustand = Deaktiviert
	}
	return c
}

// decide sorts the cell's records and fills the activation fields of c from
// the one that decides the state on the key day.
func (b *treeBuilder) decide(idx []int, c *Cell) activity {
	if len(idx) == 0 {
		return inactive
	}
	recs := make([]*StoredActivation, len(idx))
	for i, x := range idx {
		recs[i] = &b.in.Activations[x]
	}
	slices.SortFunc(recs, compareRecords)

	d := b.in.Stichtag
	// Sorted by GueltigAb first, the records in force by D are a prefix.
	n, _ := slices.BinarySearchFunc(recs, d, func(a *StoredActivation, d pipeline.Day) int {
		if d.Before(a.GueltigAb) {
			return 1
		}
		return -1
	})
	if n == 0 {
		return decideFuture(recs, c)
	}
	r := recs[n-1]
	c.Quelle, c.Referenz = r.Quelle, r.Referenz
	if r.Aktion == Deaktivierung {
		c.DeaktiviertAb = dayPtr(r.GueltigAb)
		for i := n - 2; i >= 0; i-- {
			if recs[i].Aktion != Deaktivierung {
				c.AktivAb, c.AktivBis = dayPtr(recs[i].GueltigAb), optDay(recs[i].GueltigBis)
				break
			}
		}
		return deactivated
	}
	c.AktivAb, c.AktivBis = dayPtr(r.GueltigAb), optDay(r.GueltigBis)
	if r.GueltigBis != nil && !d.Before(*r.GueltigBis) {
		c.DeaktiviertAb = dayPtr(*r.GueltigBis)
		return deactivated
	}
	return active
}

// decideFuture handles a cell whose records all lie after the key day: the
// earliest future activation makes it pending; with none, the earliest
// future deactivation stands. Among records of one day the one that would
// decide on that day wins.
func decideFuture(recs []*StoredActivation, c *Cell) activity {
	// recs are sorted, so the first match is the earliest and later ones
	// of the same day win the tie.
	pick := func(deact bool) *StoredActivation {
		var best *StoredActivation
		for _, r := range recs {
			if (r.Aktion == Deaktivierung) != deact {
				continue
			}
			if best == nil || r.GueltigAb == best.GueltigAb {
				best = r
			}
		}
		return best
	}
	if r := pick(false); r != nil {
		c.Quelle, c.Referenz = r.Quelle, r.Referenz
		c.AktivAb, c.AktivBis = dayPtr(r.GueltigAb), optDay(r.GueltigBis)
		return pending
	}
	r := pick(true)
	c.Quelle, c.Referenz = r.Quelle, r.Referenz
	c.DeaktiviertAb = dayPtr(r.GueltigAb)
	return deactivated
}

// compareRecords orders a cell's records so that the last one of a day
// decides: by GueltigAb, then ReceivedAt, then UTILMD after import. The
// remaining keys only make the order total, so that the result does not
// depend on the input order.
func compareRecords(x, y *StoredActivation) int {
	if c := x.GueltigAb.Compare(y.GueltigAb); c != 0 {
		return c
	}
	if c := x.ReceivedAt.Compare(y.ReceivedAt); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(sourceRank(x.Quelle), sourceRank(y.Quelle)),
		cmp.Compare(x.Quelle, y.Quelle),
		cmp.Compare(x.SourceKey, y.SourceKey),
		cmp.Compare(x.Referenz, y.Referenz),
		cmp.Compare(actionRank(x.Aktion), actionRank(y.Aktion)),
		compareEnd(x.GueltigBis, y.GueltigBis),
	)
}

// sourceRank puts a DSO's UTILMD message after our own import, so that it
// wins a tie.
func sourceRank(s Source) int {
	if s == SourceUTILMD {
		return 1
	}
	return 0
}

// actionRank lets a deactivation win a complete tie: a series that may have
// ended is shown as ended rather than hidden as active.
func actionRank(a Action) int {
	if a == Deaktivierung {
		return 1
	}
	return 0
}

// compareEnd orders open-ended activations last.
func compareEnd(x, y *pipeline.Day) int {
	switch {
	case x == nil && y == nil:
		return 0
	case x == nil:
		return 1
	case y == nil:
		return -1
	}
	return x.Compare(*y)
}

func dayPtr(d pipeline.Day) *pipeline.Day { return &d }

// optDay copies an optional day so that the tree does not alias its input.
func optDay(d *pipeline.Day) *pipeline.Day {
	if d == nil {
		return nil
	}
	return dayPtr(*d)
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func (c *Counts) inc(s State) {
	switch s {
	case Erwartet:
		c.Erwartet++
	case Aktiv:
		c.Aktiv++
	case Deaktiviert:
		c.Deaktiviert++
	case Fehlt:
		c.Fehlt++
	case Unerwartet:
		c.Unerwartet++
	}
}

func (c *Counts) add(o Counts) {
	c.Erwartet += o.Erwartet
	c.Aktiv += o.Aktiv
	c.Deaktiviert += o.Deaktiviert
	c.Fehlt += o.Fehlt
	c.Unerwartet += o.Unerwartet
}

func (k *Customers) add(g Group, n int) {
	switch g {
	case GroupIMSys:
		k.IMSys += n
	case GroupRLM:
		k.RLM += n
	case GroupSLP:
		k.SLP += n
	case GroupTLP:
		k.TLP += n
	default:
		k.OhneTyp += n
	}
}

func (k *Customers) addAll(o Customers) {
	k.IMSys += o.IMSys
	k.RLM += o.RLM
	k.SLP += o.SLP
	k.TLP += o.TLP
	k.OhneTyp += o.OhneTyp
}
