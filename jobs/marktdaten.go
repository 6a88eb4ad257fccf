package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/ingest/marketdata"
	"github.com/schedbridge/schedbridge/ingest/prices"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/pipeline/price"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// Drop folders of the market data: price files under inbox/prices/<kind>/,
// activation lists under inbox/zeitreihen/.
const (
	PricesPrefix        = "inbox/prices/"
	pricesProcessed     = "processed/prices/"
	pricesRejected      = "rejected/prices/"
	ZeitreihenPrefix    = "inbox/zeitreihen/"
	zeitreihenProcessed = "processed/zeitreihen/"
	zeitreihenRejected  = "rejected/zeitreihen/"
)

// MarktdatenStore is what the ramp-up, the Zeitreihen tree and the price
// imports need of the database.
type MarktdatenStore interface {
	PutSnapshot(ctx context.Context, s zeitreihen.Snapshot, hash, keyID string, now time.Time) (zeitreihen.StoredSnapshot, bool, error)
	CurrentSnapshot(ctx context.Context) (zeitreihen.StoredSnapshot, error)
	Snapshots(ctx context.Context, limit int) ([]zeitreihen.StoredSnapshot, error)
	ReplaceActivations(ctx context.Context, src zeitreihen.Source, key string, recs []zeitreihen.Activation, now time.Time) (bool, error)
	Activations(ctx context.Context) ([]zeitreihen.StoredActivation, error)
	PutPrices(ctx context.Context, kind price.Kind, points []price.Point, source string, now time.Time) (int, error)
	Prices(ctx context.Context, kind price.Kind, from, to time.Time) ([]price.Point, error)
	Portfolios(ctx context.Context) ([]pipeline.Portfolio, error)
	Partners(ctx context.Context) ([]mako.Partner, error)
	RecordEvent(ctx context.Context, ev pipeline.Event) error
}

// MarktdatenConfig tunes the market-data service.
type MarktdatenConfig struct {
	Now    func() time.Time
	Logger *slog.Logger
	// Rules say which series each customer group needs (default
	// zeitreihen.DefaultRules).
	Rules zeitreihen.Rules
	// DefaultContracts are the balancing groups the tree expects series
	// for in a control area that no portfolio with a balancing group covers
	// (in the binary: mako.self.balancing_group).
	DefaultContracts []string
	// MaxFileBytes caps a dropped file (default 64 MiB: a year of reBAP is
	// about 3 MiB).
	MaxFileBytes int64
}

// Marktdaten keeps the customer ramp-up snapshot, the series activations
// and the market prices, and builds the views on them.
type Marktdaten struct {
	store MarktdatenStore
	cfg   MarktdatenConfig
}

// NewMarktdaten wires the service.
func NewMarktdaten(store MarktdatenStore, cfg MarktdatenConfig) *Marktdaten {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Rules.Types == nil {
		cfg.Rules = zeitreihen.DefaultRules()
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 64 << 20
	}
	return &Marktdaten{store: store, cfg: cfg}
}

// PutSnapshot replaces the stored ramp-up snapshot with the body's as a
// whole. It triggers nothing and records no event (contract section 6).
func (m *Marktdaten) PutSnapshot(ctx context.Context, body []byte, keyID string) (zeitreihen.SnapshotResult, error) {
	s, hash, err := marketdata.DecodeSnapshot(body)
	if err != nil {
		return zeitreihen.SnapshotResult{}, err
	}
	stored, replaced, err := m.store.PutSnapshot(ctx, s, hash, keyID, m.cfg.Now())
	if err != nil {
		return zeitreihen.SnapshotResult{}, fmt.Errorf("ramp-up snapshot: %w", err)
	}
	res := zeitreihen.SnapshotResult{Ersetzt: replaced, Stand: stored.Stand, Quelle: stored.Quelle,
		Eintraege: len(stored.Eintraege), EmpfangenAt: stored.ReceivedAt}
	for _, e := range stored.Eintraege {
		res.Summe += e.Anzahl
	}
	return res, nil
}

// RampUp is the stored snapshot as a view as of stichtag.
func (m *Marktdaten) RampUp(ctx context.Context, stichtag pipeline.Day) (zeitreihen.View, error) {
	s, err := m.store.CurrentSnapshot(ctx)
	if pipeline.KindOf(err) == pipeline.NotFound {
		return zeitreihen.View{}, pipeline.Errorf(pipeline.NotFound, "no ramp-up snapshot received yet: POST /v1/process/kundenhochlauf/quellstand")
	}
	if err != nil {
		return zeitreihen.View{}, err
	}
	names, err := m.partnerNames(ctx)
	if err != nil {
		return zeitreihen.View{}, err
	}
	return zeitreihen.RampUpView(s, names, stichtag), nil
}

// Snapshots lists the stored snapshots, newest first.
func (m *Marktdaten) Snapshots(ctx context.Context, limit int) ([]zeitreihen.StoredSnapshot, error) {
	return m.store.Snapshots(ctx, limit)
}

// Tree builds the Zeitreihen activation tree as of stichtag. It only reads.
func (m *Marktdaten) Tree(ctx context.Context, stichtag pipeline.Day, f zeitreihen.Filter) (zeitreihen.Marktrollen, error) {
	in := zeitreihen.Input{Stichtag: stichtag, Rules: m.cfg.Rules, Filter: f, DefaultContracts: m.cfg.DefaultContracts}
	out := zeitreihen.Marktrollen{Stichtag: stichtag, Regeln: map[zeitreihen.Group][]zeitreihen.SeriesType{}, Rollen: m.cfg.Rules.Roles}
	for _, g := range zeitreihen.Groups {
		out.Regeln[g] = append([]zeitreihen.SeriesType{}, m.cfg.Rules.Types[g]...)
	}
	s, err := m.store.CurrentSnapshot(ctx)
	switch {
	case err == nil:
		in.Snapshot = &s
		out.Hochlauf = &zeitreihen.SnapshotInfo{Stand: s.Stand, Quelle: s.Quelle, EmpfangenAt: s.ReceivedAt}
	case pipeline.KindOf(err) != pipeline.NotFound:
		return out, err
	}
	if in.Activations, err = m.store.Activations(ctx); err != nil {
		return out, err
	}
	if in.Contracts, err = m.contracts(ctx); err != nil {
		return out, err
	}
	if in.Names, err = m.partnerNames(ctx); err != nil {
		return out, err
	}
	out.Zeitreihen.Aktivierungen = zeitreihen.BuildTree(in)
	return out, nil
}

// contracts are the balancing groups of the portfolios per control area.
func (m *Marktdaten) contracts(ctx context.Context) (map[pipeline.ControlArea][]string, error) {
	ps, err := m.store.Portfolios(ctx)
	if err != nil {
		return nil, err
	}
	out := map[pipeline.ControlArea][]string{}
	for _, p := range ps {
		if p.BalancingGroup == "" {
			continue
		}
		for _, a := range p.ControlAreas {
			if !slices.Contains(out[a], p.BalancingGroup) {
				out[a] = append(out[a], p.BalancingGroup)
			}
		}
	}
	return out, nil
}

// partnerNames maps DSO mp_ids to their names in the registry.
func (m *Marktdaten) partnerNames(ctx context.Context) (map[string]string, error) {
	ps, err := m.store.Partners(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(ps))
	for _, p := range ps {
		names[p.MPID] = p.Name
	}
	return names, nil
}

// ImportActivations replaces the imported activation records (those of
// earlier imports through the API or a dropped file; UTILMD records stay)
// with recs. source names where they came from, for the console event.
func (m *Marktdaten) ImportActivations(ctx context.Context, recs []zeitreihen.Activation, source string) (zeitreihen.ActivationImport, error) {
	changed, err := m.store.ReplaceActivations(ctx, zeitreihen.SourceImport, string(zeitreihen.SourceImport), recs, m.cfg.Now())
	if err != nil {
		return zeitreihen.ActivationImport{}, fmt.Errorf("activation import: %w", err)
	}
	res := zeitreihen.ActivationImport{Datensaetze: len(recs), Geaendert: changed}
	if changed {
		m.event(ctx, "zeitreihen.aktivierungen", source, res)
	}
	return res, nil
}

// Activations lists the stored activation records.
func (m *Marktdaten) Activations(ctx context.Context) ([]zeitreihen.StoredActivation, error) {
	return m.store.Activations(ctx)
}

// maxMissingListed caps the missing intervals an import result lists.
const maxMissingListed = 100

// ImportPrices stores a price file of the kind: SMARD chart JSON for spot
// prices, a netztransparenz CSV for reBAP. Intervals the file lists
// without a price are reported and leave a stored price alone; the import
// is one transaction, so a bad file changes nothing.
func (m *Marktdaten) ImportPrices(ctx context.Context, kind price.Kind, data []byte, source string) (price.ImportResult, error) {
	s, err := prices.Parse(kind, data)
	if err != nil {
		return price.ImportResult{}, err
	}
	res := price.ImportResult{Kind: kind, Format: s.Format, Points: len(s.Points), MissingCount: len(s.Missing),
		Missing: s.Missing[:min(len(s.Missing), maxMissingListed)], Days: []pipeline.Day{}}
	if res.Missing == nil {
		res.Missing = []time.Time{}
	}
	if len(s.Points) > 0 {
		first, last := s.Points[0], s.Points[len(s.Points)-1]
		res.From, res.To = first.Start, last.Start.Add(time.Duration(last.Minutes)*time.Minute)
		for d := pipeline.DayOf(res.From); d.Start().Before(res.To); d = d.AddDays(1) {
			res.Days = append(res.Days, d)
		}
	}
	if res.Stored, err = m.store.PutPrices(ctx, kind, price.QuarterHours(s.Points), source, m.cfg.Now()); err != nil {
		return res, fmt.Errorf("price import %s: %w", kind, err)
	}
	if res.Stored > 0 || res.MissingCount > 0 {
		m.event(ctx, "prices.imported", source, res)
	}
	return res, nil
}

// Prices lists the stored quarter-hour prices of the kind in [from, to).
func (m *Marktdaten) Prices(ctx context.Context, kind price.Kind, from, to time.Time) ([]price.Point, error) {
	return m.store.Prices(ctx, kind, from, to)
}

// DropReport is what a sync of the market-data drop folders did.
type DropReport struct {
	Prices     []DropFile `json:"prices"`
	Zeitreihen []DropFile `json:"zeitreihen"`
}

// SyncDrops imports the files dropped into inbox/prices/spot/,
// inbox/prices/rebap/ and inbox/zeitreihen/ (activation lists as JSON like
// the PUT body, or CSV), moving each to processed/ or rejected/.
func (m *Marktdaten) SyncDrops(ctx context.Context, b DropBucket) (DropReport, error) {
	var rep DropReport
	folder := func(prefix, processed, rejected string) dropFolder {
		return dropFolder{Prefix: prefix, Processed: processed, Rejected: rejected,
			MaxBytes: m.cfg.MaxFileBytes, Now: m.cfg.Now, Logger: m.cfg.Logger}
	}
	for _, kind := range price.Kinds {
		sub := string(kind) + "/"
		out, err := folder(PricesPrefix+sub, pricesProcessed+sub, pricesRejected+sub).sync(ctx, b,
			func(ctx context.Context, key string, data []byte) (any, error) {
				return m.ImportPrices(ctx, kind, data, key)
			})
		rep.Prices = append(rep.Prices, out...)
		if err != nil {
			return rep, fmt.Errorf("price drop %w", err)
		}
	}
	out, err := folder(ZeitreihenPrefix, zeitreihenProcessed, zeitreihenRejected).sync(ctx, b,
		func(ctx context.Context, key string, data []byte) (any, error) {
			var recs []zeitreihen.Activation
			var err error
			if strings.EqualFold(path.Ext(key), ".csv") {
				recs, err = marketdata.DecodeActivationsCSV(data)
			} else {
				recs, err = marketdata.DecodeActivations(data)
			}
			if err != nil {
				return nil, err
			}
			return m.ImportActivations(ctx, recs, key)
		})
	rep.Zeitreihen = out
	if err != nil {
		return rep, fmt.Errorf("activation drop %w", err)
	}
	return rep, nil
}

// event records a console event; a failure is logged, as the event only
// reports what already happened.
func (m *Marktdaten) event(ctx context.Context, kind, subject string, data any) {
	b, _ := json.Marshal(data)
	if err := m.store.RecordEvent(ctx, pipeline.Event{At: m.cfg.Now(), Kind: kind, Subject: subject, Data: b}); err != nil {
		m.cfg.Logger.Error("record event", "kind", kind, "err", err)
	}
}
