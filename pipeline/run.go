package pipeline

import (
	"encoding/json"
	"time"
)

// Stage is one step of the day-ahead chain. The order of Stages is the order
// of the chain: each stage reads what the one before it published.
type Stage string

// The stages of the day-ahead chain.
const (
	StageForecast     Stage = "forecast"      // generate forecasts per market location
	StageAggregate    Stage = "aggregate"     // sum per control area and quarter-hour
	StageOpenPosition Stage = "open-position" // net forecast minus procured trades
	StageSchedules    Stage = "schedules"     // build and submit ESS schedules to the TSOs
	// StageKalkulation is not part of the day-ahead chain: it runs for a
	// past delivery day, when the Ist has arrived, and materializes what
	// the period calculation reads.
	StageKalkulation Stage = "kalkulation"
	// StageChain names the run record of a whole orchestrated chain, whose
	// stage runs point at it as their parent.
	StageChain Stage = "chain"
)

// Stages lists the chain's stages in order.
var Stages = []Stage{StageForecast, StageAggregate, StageOpenPosition, StageSchedules}

// AllStages are the stages a run can be of: the chain's, then kalkulation.
var AllStages = append(Stages[:len(Stages):len(Stages)], StageKalkulation)

// DefaultDay is the delivery day a stage works on when none is named: the
// next day for the stages of the chain (and the chain), which plan ahead,
// and yesterday for kalkulation, which calculates a day that is over.
func (s Stage) DefaultDay(today Day) Day {
	if s == StageKalkulation {
		return today.AddDays(-1)
	}
	return today.AddDays(1)
}

// ParseStage accepts one of the four stages of the chain or kalkulation.
func ParseStage(s string) (Stage, error) {
	for _, st := range AllStages {
		if string(st) == s {
			return st, nil
		}
	}
	return "", Errorf(Invalid, "stage %q: want forecast, aggregate, open-position, schedules or kalkulation", s)
}

// RunStatus is where a run is in its life.
type RunStatus string

// Run states. A run that a crashed process left running is marked failed by
// the scheduler's leader once its heartbeat is stale.
const (
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
)

// Run is the record of one execution of a stage (or of the chain) for one
// delivery day over all portfolios. Its ID names the Parquet snapshot
// (run=<id>) and the materialized read models it wrote.
type Run struct {
	ID         int64      `json:"id"`
	ParentID   *int64     `json:"parent_id,omitempty"`
	Stage      Stage      `json:"stage"`
	Day        Day        `json:"delivery_day"`
	Status     RunStatus  `json:"status"`
	Trigger    string     `json:"trigger"` // cron, api, cli, demo
	Attempt    int        `json:"attempt"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Error      string     `json:"error,omitempty"`
	// HeartbeatAt is when the process executing the run last said it was
	// alive; a running run whose heartbeat is older than the staleness
	// threshold is failed by the scheduler's leader.
	HeartbeatAt *time.Time `json:"heartbeat_at,omitempty"`
	// CronSlot is the time the cron spec fell due for a run that the
	// scheduler fired: a slot runs each attempt once, whichever process
	// leads.
	CronSlot *time.Time `json:"cron_slot,omitempty"`
	// RetryOf is the failed run that an operator's retry started this one
	// for; FromStage is the stage a retried chain starts at (its stages
	// before it had succeeded already).
	RetryOf   *int64 `json:"retry_of,omitempty"`
	FromStage Stage  `json:"from_stage,omitempty"`
	// IdempotencyKey and RequestHash make a start over the API idempotent:
	// the key (a hash of the caller and its Idempotency-Key header) is
	// unique among runs, and the hash of the request tells a repeated
	// request from a different one under the same key. Never shown.
	IdempotencyKey string `json:"-"`
	RequestHash    string `json:"-"`
	// Outputs describes what the run produced: datasets and their files,
	// row and value counts, per-portfolio figures, documents sent.
	Outputs json.RawMessage `json:"outputs,omitempty"`
}

// RunQuery selects run records, newest first.
type RunQuery struct {
	Day      *Day      // only runs of this delivery day
	Stage    Stage     // "" for all
	Status   RunStatus // "" for all
	Trigger  string    // "" for all
	ParentID *int64    // only the stage runs of this chain
	// BeforeID pages by keyset: only runs with a smaller id (0 starts at
	// the newest).
	BeforeID int64
	Limit    int
}

// RunLogLine is one log line that a run wrote while it ran, kept with the
// run so that operators read it in the console from any replica.
type RunLogLine struct {
	RunID   int64           `json:"-"`
	Seq     int             `json:"seq"`
	At      time.Time       `json:"at"`
	Level   string          `json:"level"` // DEBUG, INFO, WARN, ERROR as slog names them
	Message string          `json:"msg"`
	Attrs   json.RawMessage `json:"attrs,omitempty"`
}

// StartRequest asks for a stage or the whole chain (StageChain) to be run
// for a day, now and in the background.
type StartRequest struct {
	Stage   Stage
	Day     Day
	Trigger string
	// FromStage starts a chain at this stage instead of the first.
	FromStage Stage
	// RetryOf names the failed run this start retries.
	RetryOf *int64
	// IdempotencyKey and RequestHash: see Run.
	IdempotencyKey string
	RequestHash    string
}

// Direction says whether a trade buys energy into the portfolio's balancing
// group or sells it out of it.
type Direction string

// Trade directions.
const (
	Buy  Direction = "buy"
	Sell Direction = "sell"
)

// Trade is energy already procured for a delivery day: a quantity bought from
// or sold to a counterparty balancing group in one control area, per
// quarter-hour, as non-negative values in Unit.
type Trade struct {
	ControlArea  ControlArea `json:"control_area"`
	Counterparty string      `json:"counterparty"` // EIC of the counterparty balancing group
	Direction    Direction   `json:"direction"`
	Unit         Unit        `json:"unit"`
	Values       []float64   `json:"values"`
}

// TradeSet is the whole set of trades of a portfolio for a delivery day. An
// import replaces the set as a whole, so importing the same file twice never
// counts a trade twice.
type TradeSet struct {
	Portfolio string  `json:"portfolio"`
	Day       Day     `json:"delivery_day"`
	Trades    []Trade `json:"trades"`
}

// ScheduleStatus is where a submitted schedule message stands with its TSO.
type ScheduleStatus string

// Schedule states, driven by the TSO's answers. A negative acknowledgement
// (the TSO refused the whole message) is rejected.
const (
	ScheduleSubmitted    ScheduleStatus = "submitted"
	ScheduleAcknowledged ScheduleStatus = "acknowledged"
	ScheduleRejected     ScheduleStatus = "rejected"
	ScheduleAnomaly      ScheduleStatus = "anomaly"
	ScheduleConfirmed    ScheduleStatus = "confirmed"
)

// ScheduleMessage is one version of the ESS schedule message of a portfolio,
// delivery day and control area, as written to the outbox.
type ScheduleMessage struct {
	ID          int64          `json:"id"`
	PortfolioID string         `json:"portfolio"`
	Day         Day            `json:"delivery_day"`
	ControlArea ControlArea    `json:"control_area"`
	MessageID   string         `json:"message_id"` // ESS MessageIdentification
	Version     int            `json:"version"`
	FileName    string         `json:"file_name"`
	ObjectKey   string         `json:"object_key"`
	ContentHash string         `json:"content_hash"`
	Sender      string         `json:"sender"`   // the portfolio's balancing group EIC
	Receiver    string         `json:"receiver"` // the TSO's party EIC
	RunID       int64          `json:"run_id"`
	Status      ScheduleStatus `json:"status"`
	SentAt      time.Time      `json:"sent_at"`
	// The latest TSO answer, when one arrived.
	AnswerKind   string     `json:"answer_kind,omitempty"` // ACK, ANO, CNF
	AnswerAt     *time.Time `json:"answer_at,omitempty"`
	AnswerKey    string     `json:"answer_key,omitempty"`
	AnswerDetail string     `json:"answer_detail,omitempty"`
	// BoughtMW and SoldMW are the message's quantities per quarter-hour
	// (average MW), summed over its series: energy into and out of the
	// sender's balancing group. They are stored beside the document so that
	// the period calculation need not parse it; nil for messages recorded
	// before they were kept, whose quantities only the document has.
	BoughtMW []float64 `json:"-"`
	SoldMW   []float64 `json:"-"`
	// Document is the message as it goes to the TSO. It is recorded with
	// the version in its run's commit and delivered to the outbox after it;
	// only the delivery reads it back.
	Document []byte `json:"-"`
}

// RunPart is one Parquet file that a job of a run staged in the lake for
// the run's commit to publish.
type RunPart struct {
	Dataset string `json:"dataset"`
	// Job names the job of the run that wrote the part ("" for a run of one
	// job); a job that runs again replaces its parts.
	Job   string `json:"job,omitempty"`
	Key   string `json:"key"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
	// Footer is the part's Parquet footer as its writer wrote it, for the
	// commit to register the part without reading it back; nil if unknown.
	Footer []byte `json:"-"`
}

// PositionRow is one quarter-hour of a portfolio's position in a control
// area, as the aggregate stage materializes it for the read endpoints.
type PositionRow struct {
	Portfolio     string      `json:"portfolio"`
	ControlArea   ControlArea `json:"control_area"`
	QH            int         `json:"qh_index"`
	TS            time.Time   `json:"ts_utc"`
	ConsumptionMW float64     `json:"consumption_mw"`
	ProductionMW  float64     `json:"production_mw"`
	NetMW         float64     `json:"net_mw"`
	Source        string      `json:"source"` // submitted | generated
}

// OpenPositionRow is one quarter-hour of a portfolio's open position in a
// control area: the net forecast minus what is bought plus what is sold.
type OpenPositionRow struct {
	Portfolio   string      `json:"portfolio"`
	ControlArea ControlArea `json:"control_area"`
	QH          int         `json:"qh_index"`
	TS          time.Time   `json:"ts_utc"`
	NetMW       float64     `json:"net_mw"`
	BoughtMW    float64     `json:"bought_mw"`
	SoldMW      float64     `json:"sold_mw"`
	OpenMW      float64     `json:"open_mw"`
}

// ScheduleStats counts the schedule messages sent to the TSOs, in all and
// by the state their latest answer left them in.
type ScheduleStats struct {
	Sent     int64                    `json:"sent"`
	ByStatus map[ScheduleStatus]int64 `json:"by_status"`
}
