package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/mail"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"gopkg.in/yaml.v3"

	"github.com/schedbridge/schedbridge/jobs"
)

// Config is the whole configuration of the binary. Every subcommand reads the
// same configuration, so that `key create` and `serve` see the same database.
// Precedence: defaults, then the YAML file of --config, then the environment.
// Every YAML key has an environment variable (envVars); the fields tagged
// secret are redacted by `schedbridge config`.
type Config struct {
	Addr            string         `yaml:"addr" check:"listen"`
	MetricsAddr     string         `yaml:"metrics_addr" check:"listen"` // GET /metrics, on a listener apart from the API's
	DataDir         string         `yaml:"data_dir" check:"nonempty"`
	DatabaseURL     string         `yaml:"database_url" check:"custom"`
	MaxBodyBytes    int64          `yaml:"max_body_bytes" check:"positive"`
	ReadTimeout     time.Duration  `yaml:"read_timeout" check:"positive"`
	WriteTimeout    time.Duration  `yaml:"write_timeout" check:"positive"`
	RateLimit       float64        `yaml:"rate_limit" check:"nonnegative"`
	RateBurst       int            `yaml:"rate_burst" check:"nonnegative"`
	RetryAfter      time.Duration  `yaml:"retry_after" check:"positive"`
	ShutdownTimeout time.Duration  `yaml:"shutdown_timeout" check:"positive"`
	DrainGrace      time.Duration  `yaml:"drain_grace" check:"nonnegative"`
	LogLevel        string         `yaml:"log_level" check:"custom"`
	LogFormat       string         `yaml:"log_format" check:"oneof=json|text"`
	S3              S3Config       `yaml:"s3"`
	Inbox           InboxConfig    `yaml:"inbox"`
	Pipeline        PipelineConfig `yaml:"pipeline"`
	Mako            MakoConfig     `yaml:"mako"`
	// Environment marks the deployment: "production" (the default) or
	// "development". Production refuses the portal's insecure cookies.
	Environment string        `yaml:"environment" check:"oneof=production|development"`
	Portal      PortalConfig  `yaml:"portal"`
	Console     ConsoleConfig `yaml:"console"`
}

// ConsoleConfig tunes the operators' web console under /console/, which
// signs staff in through the portal's single sign-on.
type ConsoleConfig struct {
	// OperatorGroups are the values of the provider's groups claim
	// (portal.oidc.groups_claim) that make a person an operator; beside
	// them, the operator list kept with `schedbridge operator` does.
	OperatorGroups []string `yaml:"operator_groups" check:"free"`
}

// S3Config selects the bucket. Without an endpoint the bucket is the local
// directory <data_dir>/bucket.
type S3Config struct {
	Endpoint  string `yaml:"endpoint" check:"custom"`
	Bucket    string `yaml:"bucket" check:"custom"`
	AccessKey string `yaml:"access_key" check:"custom"`
	SecretKey string `yaml:"secret_key" secret:"true" check:"custom"`
	UseSSL    bool   `yaml:"use_ssl" check:"free"`
	Region    string `yaml:"region" check:"free"`
}

// InboxConfig tunes the bulk inbox that serve runs.
type InboxConfig struct {
	Enabled      bool          `yaml:"enabled" check:"free"`
	Interval     time.Duration `yaml:"interval" check:"positive"`
	Lease        time.Duration `yaml:"lease" check:"custom"`
	MaxFileBytes int64         `yaml:"max_file_bytes" check:"positive"`
	// MaxAttempts is how often a file is tried when its processing fails
	// for reasons that are not the file's fault, before it is failed and
	// left for an operator to retry (GET /v1/console/inbox?state=failed).
	MaxAttempts  int    `yaml:"max_attempts" check:"positive"`
	WebhookToken string `yaml:"webhook_token" secret:"true" check:"custom"`
	WebhookOpen  bool   `yaml:"webhook_open" check:"custom"`
}

// MakoConfig configures the market communication with the DSOs.
type MakoConfig struct {
	// Sync runs the channel sync in serve every Interval (default 5 min).
	Sync     bool          `yaml:"sync" check:"free"`
	Interval time.Duration `yaml:"interval" check:"positive"`
	Self     MakoSelf      `yaml:"self"`
	// MailFolders maps folder names to "in" or "out"; unlisted folders hold
	// received mail. The default knows INBOX, Sent, Gesendet and Gesendete
	// Elemente.
	MailFolders map[string]string `yaml:"mail_folders" check:"custom"`
	IMAP        IMAPConfig        `yaml:"imap"`
}

// MakoSelf is our identity as sender of PARTIN and Zuordnungsermaechtigung.
type MakoSelf struct {
	MPID            string   `yaml:"mp_id" check:"free"`
	Name            string   `yaml:"name" check:"free"`
	Street          string   `yaml:"street" check:"free"`
	PostalCode      string   `yaml:"postal_code" check:"free"`
	City            string   `yaml:"city" check:"free"`
	ContactName     string   `yaml:"contact_name" check:"free"`
	Email           string   `yaml:"email" check:"custom"`
	Phone           string   `yaml:"phone" check:"free"`
	PartinProcessID string   `yaml:"partin_process_id" check:"free"`
	BalancingGroup  string   `yaml:"balancing_group" check:"free"`
	Supplier        string   `yaml:"supplier" check:"free"`
	SeriesTypes     []string `yaml:"series_types" check:"free"`
}

// IMAPConfig is the mailbox synced for the mail channel; no address, no
// IMAP sync (the .eml files of inbox/mail/ are still read).
type IMAPConfig struct {
	Addr     string   `yaml:"addr" check:"custom"`
	Username string   `yaml:"username" check:"custom"`
	Password string   `yaml:"password" secret:"true" check:"custom"`
	Security string   `yaml:"security" check:"oneof=tls|starttls|none"` // tls (default), starttls, none (loopback only)
	Folders  []string `yaml:"folders" check:"free"`
}

func defaultConfig() Config {
	c := Config{
		Addr:            "127.0.0.1:8080",
		MetricsAddr:     "127.0.0.1:9090",
		DataDir:         "./var",
		MaxBodyBytes:    64 << 20,
		ReadTimeout:     60 * time.Second,
		WriteTimeout:    60 * time.Second,
		RateLimit:       50,
		RetryAfter:      5 * time.Second,
		ShutdownTimeout: 30 * time.Second,
		LogLevel:        "info",
		LogFormat:       "json",
		S3:              S3Config{Bucket: "schedbridge"},
		Inbox:           InboxConfig{Enabled: true, Interval: 30 * time.Second, Lease: 2 * time.Minute, MaxFileBytes: 8 << 30, MaxAttempts: 5},
		Pipeline:        PipelineConfig{Scheduler: true, Attempts: 3, Backoff: 30 * time.Second, HistoryWeeks: 8, Compression: "zstd", RunHeartbeat: jobs.DefaultHeartbeat, RunStaleAfter: jobs.DefaultStaleAfter, LeaderPoll: jobs.DefaultLeaderPoll, LakeRetention: jobs.DefaultSweepAge},
		Mako:            MakoConfig{Sync: true, Interval: 5 * time.Minute, Self: MakoSelf{PartinProcessID: "37000"}, IMAP: IMAPConfig{Security: "tls"}},
		Environment:     "production",
		Portal: PortalConfig{Enabled: true, SessionIdle: 30 * time.Minute, SessionAbsolute: 12 * time.Hour,
			MagicLinkTTL: 15 * time.Minute, MagicLinksPerHour: 5, SMTP: PortalSMTP{Security: "starttls"}},
	}
	// The maps hold the defaults in effect, so that `schedbridge config`
	// prints them; the file and the variables add and replace entries.
	c.Pipeline.Schedule = map[string]string{}
	for st, spec := range jobs.DefaultSpecs {
		c.Pipeline.Schedule[string(st)] = spec
	}
	c.Pipeline.TSOParty, c.Pipeline.ControlAreaEIC = map[string]string{}, map[string]string{}
	for area, eic := range jobs.Defaults().TSOParty {
		c.Pipeline.TSOParty[string(area)] = eic
	}
	for area, eic := range jobs.Defaults().AreaEIC {
		c.Pipeline.ControlAreaEIC[string(area)] = eic
	}
	c.Mako.MailFolders = maps.Clone(defaultMailFolders)
	return c
}

// defaultMailFolders are the mail folders whose direction is known without
// configuration; unlisted folders hold received mail.
var defaultMailFolders = map[string]string{"INBOX": "in", "Sent": "out", "Gesendet": "out", "Gesendete Elemente": "out"}

// envVar binds one environment variable to the YAML key it overrides. A
// key inside a map ("pipeline.schedule.forecast") sets one entry.
type envVar struct{ name, key string }

// envVars lists every environment variable; TestEveryKeyHasAnEnvVar checks
// that each YAML key of Config has one.
var envVars = []envVar{
	{"SCHEDBRIDGE_ADDR", "addr"},
	{"SCHEDBRIDGE_METRICS_ADDR", "metrics_addr"},
	{"SCHEDBRIDGE_DATA_DIR", "data_dir"},
	{"SCHEDBRIDGE_DATABASE_URL", "database_url"},
	{"SCHEDBRIDGE_MAX_BODY_BYTES", "max_body_bytes"},
	{"SCHEDBRIDGE_READ_TIMEOUT", "read_timeout"},
	{"SCHEDBRIDGE_WRITE_TIMEOUT", "write_timeout"},
	{"SCHEDBRIDGE_RATE_LIMIT", "rate_limit"},
	{"SCHEDBRIDGE_RATE_BURST", "rate_burst"},
	{"SCHEDBRIDGE_RETRY_AFTER", "retry_after"},
	{"SCHEDBRIDGE_SHUTDOWN_TIMEOUT", "shutdown_timeout"},
	{"SCHEDBRIDGE_DRAIN_GRACE", "drain_grace"},
	{"SCHEDBRIDGE_LOG_LEVEL", "log_level"},
	{"SCHEDBRIDGE_LOG_FORMAT", "log_format"},
	{"SCHEDBRIDGE_S3_ENDPOINT", "s3.endpoint"},
	{"SCHEDBRIDGE_S3_BUCKET", "s3.bucket"},
	{"SCHEDBRIDGE_S3_ACCESS_KEY", "s3.access_key"},
	{"SCHEDBRIDGE_S3_SECRET_KEY", "s3.secret_key"},
	{"SCHEDBRIDGE_S3_USE_SSL", "s3.use_ssl"},
	{"SCHEDBRIDGE_S3_REGION", "s3.region"},
	{"SCHEDBRIDGE_INBOX", "inbox.enabled"},
	{"SCHEDBRIDGE_INBOX_INTERVAL", "inbox.interval"},
	{"SCHEDBRIDGE_INBOX_LEASE", "inbox.lease"},
	{"SCHEDBRIDGE_INBOX_MAX_ATTEMPTS", "inbox.max_attempts"},
	{"SCHEDBRIDGE_INBOX_MAX_FILE_BYTES", "inbox.max_file_bytes"},
	{"SCHEDBRIDGE_INBOX_WEBHOOK_TOKEN", "inbox.webhook_token"},
	{"SCHEDBRIDGE_INBOX_WEBHOOK_OPEN", "inbox.webhook_open"},
	{"SCHEDBRIDGE_SCHEDULER", "pipeline.scheduler"},
	{"SCHEDBRIDGE_SCHEDULE_FORECAST", "pipeline.schedule.forecast"},
	{"SCHEDBRIDGE_SCHEDULE_AGGREGATE", "pipeline.schedule.aggregate"},
	{"SCHEDBRIDGE_SCHEDULE_OPEN_POSITION", "pipeline.schedule.open-position"},
	{"SCHEDBRIDGE_SCHEDULE_SCHEDULES", "pipeline.schedule.schedules"},
	{"SCHEDBRIDGE_SCHEDULE_KALKULATION", "pipeline.schedule.kalkulation"},
	{"SCHEDBRIDGE_STAGE_ATTEMPTS", "pipeline.attempts"},
	{"SCHEDBRIDGE_STAGE_BACKOFF", "pipeline.backoff"},
	{"SCHEDBRIDGE_HISTORY_WEEKS", "pipeline.history_weeks"},
	{"SCHEDBRIDGE_HOLIDAY_STATES", "pipeline.holiday_states"},
	{"SCHEDBRIDGE_TSO_PARTY", "pipeline.tso_party"},
	{"SCHEDBRIDGE_CONTROL_AREA_EIC", "pipeline.control_area_eic"},
	{"SCHEDBRIDGE_PARQUET_COMPRESSION", "pipeline.compression"},
	{"SCHEDBRIDGE_RUN_HEARTBEAT", "pipeline.run_heartbeat"},
	{"SCHEDBRIDGE_RUN_STALE_AFTER", "pipeline.run_stale_after"},
	{"SCHEDBRIDGE_LEADER_POLL", "pipeline.leader_poll"},
	{"SCHEDBRIDGE_LAKE_RETENTION", "pipeline.lake_retention"},
	{"SCHEDBRIDGE_MAKO_SYNC", "mako.sync"},
	{"SCHEDBRIDGE_MAKO_INTERVAL", "mako.interval"},
	{"SCHEDBRIDGE_MAKO_MP_ID", "mako.self.mp_id"},
	{"SCHEDBRIDGE_MAKO_NAME", "mako.self.name"},
	{"SCHEDBRIDGE_MAKO_STREET", "mako.self.street"},
	{"SCHEDBRIDGE_MAKO_POSTAL_CODE", "mako.self.postal_code"},
	{"SCHEDBRIDGE_MAKO_CITY", "mako.self.city"},
	{"SCHEDBRIDGE_MAKO_CONTACT_NAME", "mako.self.contact_name"},
	{"SCHEDBRIDGE_MAKO_EMAIL", "mako.self.email"},
	{"SCHEDBRIDGE_MAKO_PHONE", "mako.self.phone"},
	{"SCHEDBRIDGE_MAKO_PARTIN_PROCESS_ID", "mako.self.partin_process_id"},
	{"SCHEDBRIDGE_MAKO_BALANCING_GROUP", "mako.self.balancing_group"},
	{"SCHEDBRIDGE_MAKO_SUPPLIER", "mako.self.supplier"},
	{"SCHEDBRIDGE_MAKO_SERIES_TYPES", "mako.self.series_types"},
	{"SCHEDBRIDGE_MAKO_MAIL_FOLDERS", "mako.mail_folders"},
	{"SCHEDBRIDGE_IMAP_ADDR", "mako.imap.addr"},
	{"SCHEDBRIDGE_IMAP_USERNAME", "mako.imap.username"},
	{"SCHEDBRIDGE_IMAP_PASSWORD", "mako.imap.password"},
	{"SCHEDBRIDGE_IMAP_SECURITY", "mako.imap.security"},
	{"SCHEDBRIDGE_IMAP_FOLDERS", "mako.imap.folders"},
	{"SCHEDBRIDGE_ENVIRONMENT", "environment"},
	{"SCHEDBRIDGE_PORTAL", "portal.enabled"},
	{"SCHEDBRIDGE_PORTAL_BASE_URL", "portal.base_url"},
	{"SCHEDBRIDGE_PORTAL_INSECURE_COOKIES", "portal.insecure_cookies"},
	{"SCHEDBRIDGE_PORTAL_SESSION_IDLE", "portal.session_idle"},
	{"SCHEDBRIDGE_PORTAL_SESSION_ABSOLUTE", "portal.session_absolute"},
	{"SCHEDBRIDGE_PORTAL_MAGIC_LINK_TTL", "portal.magic_link_ttl"},
	{"SCHEDBRIDGE_PORTAL_MAGIC_LINKS_PER_HOUR", "portal.magic_links_per_hour"},
	{"SCHEDBRIDGE_PORTAL_OIDC_ISSUER", "portal.oidc.issuer"},
	{"SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID", "portal.oidc.client_id"},
	{"SCHEDBRIDGE_PORTAL_OIDC_CLIENT_SECRET", "portal.oidc.client_secret"},
	{"SCHEDBRIDGE_PORTAL_OIDC_NATIVE_CLIENT_ID", "portal.oidc.native_client_id"},
	{"SCHEDBRIDGE_PORTAL_OIDC_NATIVE_REDIRECT_URIS", "portal.oidc.native_redirect_uris"},
	{"SCHEDBRIDGE_PORTAL_OIDC_GROUPS_CLAIM", "portal.oidc.groups_claim"},
	{"SCHEDBRIDGE_PORTAL_OIDC_EXTRA_SCOPES", "portal.oidc.extra_scopes"},
	{"SCHEDBRIDGE_PORTAL_OIDC_EMAIL_TRUSTED_ISSUER", "portal.oidc.email_trusted_issuer"},
	{"SCHEDBRIDGE_PORTAL_SMTP_ADDR", "portal.smtp.addr"},
	{"SCHEDBRIDGE_PORTAL_SMTP_FROM", "portal.smtp.from"},
	{"SCHEDBRIDGE_PORTAL_SMTP_USERNAME", "portal.smtp.username"},
	{"SCHEDBRIDGE_PORTAL_SMTP_PASSWORD", "portal.smtp.password"},
	{"SCHEDBRIDGE_PORTAL_SMTP_SECURITY", "portal.smtp.security"},
	{"SCHEDBRIDGE_CONSOLE_OPERATOR_GROUPS", "console.operator_groups"},
}

// keyName names a YAML key in a message, with its environment variable, so
// that an operator finds it whichever way it was set.
func keyName(key string) string {
	for _, e := range envVars {
		if e.key == key {
			return key + " (" + e.name + ")"
		}
	}
	return key
}

// loadConfig builds the configuration from the optional YAML file and the
// environment (getenv is os.Getenv outside tests), and checks every value:
// a bad one refuses the start rather than falling back to a default.
func loadConfig(path string, getenv func(string) string) (Config, error) {
	c := defaultConfig()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return c, fmt.Errorf("config %s: %w", path, yamlError(b, err))
		}
	}
	for _, e := range envVars {
		if v := getenv(e.name); v != "" {
			if err := setKey(&c, e.key, v); err != nil {
				if isSecret(e.key) {
					return c, fmt.Errorf("%s (%s): %w", e.name, e.key, err)
				}
				return c, fmt.Errorf("%s=%q (%s): %w", e.name, v, e.key, err)
			}
		}
	}
	if err := c.check(); err != nil {
		return c, err
	}
	// A burst of 0 stands for the API's default, twice the rate; the
	// configuration holds the value in effect, so that `schedbridge config`
	// shows it.
	if c.RateBurst == 0 {
		c.RateBurst = max(1, int(2*c.RateLimit))
	}
	return c, nil
}

// check validates the merged configuration. Messages name the YAML key and
// its variable; they quote a value only where it cannot be a secret.
//
// Every leaf of Config carries a check tag, which TestEveryKeyIsChecked
// demands, so that a new field is checked from its first day: a rule that
// checkTags applies (positive, nonnegative, nonempty, listen, oneof=a|b),
// "custom" for a field that the code below checks, or "free" for a field
// that its type says all about.
func (c *Config) check() error {
	if err := checkTags(reflect.ValueOf(c).Elem(), ""); err != nil {
		return err
	}
	if err := checkDatabaseURL(c.DatabaseURL); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("%s %q: want debug, info, warn or error", keyName("log_level"), c.LogLevel)
	}
	if e := c.S3.Endpoint; e != "" && (strings.Contains(e, "/") || strings.ContainsAny(e, " \t")) {
		return fmt.Errorf("%s %q: want host or host:port, without a scheme (s3.use_ssl selects https)", keyName("s3.endpoint"), e)
	}
	if c.S3.Endpoint != "" && (c.S3.AccessKey == "" || c.S3.SecretKey == "" || c.S3.Bucket == "") {
		return fmt.Errorf("%s: an endpoint needs %s, %s and %s", keyName("s3.endpoint"), keyName("s3.bucket"),
			keyName("s3.access_key"), keyName("s3.secret_key"))
	}
	if c.Inbox.WebhookOpen && c.Inbox.WebhookToken != "" {
		return fmt.Errorf("%s and %s exclude each other; with a token the webhook is not open",
			keyName("inbox.webhook_open"), keyName("inbox.webhook_token"))
	}
	if c.Inbox.Lease < 3*time.Second {
		return fmt.Errorf("%s %s: want at least 3s", keyName("inbox.lease"), c.Inbox.Lease)
	}
	if err := c.Pipeline.check(); err != nil {
		return err
	}
	if err := c.Mako.check(); err != nil {
		return err
	}
	return c.checkPortal()
}

// checkTags applies the check tags of the struct v's fields, key being the
// YAML key of v.
func checkTags(v reflect.Value, key string) error {
	for i := 0; i < v.NumField(); i++ {
		f, sf := v.Field(i), v.Type().Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		k := strings.TrimPrefix(key+"."+name, ".")
		if f.Kind() == reflect.Struct {
			if err := checkTags(f, k); err != nil {
				return err
			}
			continue
		}
		if err := checkRule(sf.Tag.Get("check"), k, f); err != nil {
			return err
		}
	}
	return nil
}

// checkRule applies one check tag's rule to the value f of key.
func checkRule(rule, key string, f reflect.Value) error {
	sign := func() int {
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			return cmp.Compare(f.Int(), 0)
		case reflect.Float64:
			return cmp.Compare(f.Float(), 0)
		}
		panic("config: rule " + rule + " on " + key + " of kind " + f.Kind().String())
	}
	show := func() string {
		if f.Type() == durationType {
			return time.Duration(f.Int()).String()
		}
		return fmt.Sprint(f.Interface())
	}
	switch {
	case rule == "free", rule == "custom":
	case rule == "positive":
		if sign() <= 0 {
			return fmt.Errorf("%s %s: must be positive", keyName(key), show())
		}
	case rule == "nonnegative":
		if sign() < 0 {
			return fmt.Errorf("%s %s: must not be negative", keyName(key), show())
		}
	case rule == "nonempty":
		if f.String() == "" {
			return fmt.Errorf("%s: must not be empty", keyName(key))
		}
	case rule == "listen":
		return checkHostPort(key, f.String(), true)
	case strings.HasPrefix(rule, "oneof="):
		want := strings.Split(strings.TrimPrefix(rule, "oneof="), "|")
		if !slices.Contains(want, f.String()) {
			return fmt.Errorf("%s %q: want %s", keyName(key), f.String(), orList(want))
		}
	default:
		panic("config: unknown check rule " + rule + " of " + key)
	}
	return nil
}

func (pc PipelineConfig) check() error {
	if pc.RunStaleAfter < 2*pc.RunHeartbeat {
		// A threshold under two heartbeats would fail runs that are alive
		// but whose refresh was merely late.
		return fmt.Errorf("%s %s: want at least twice %s (%s), or live runs are failed",
			keyName("pipeline.run_stale_after"), pc.RunStaleAfter, keyName("pipeline.run_heartbeat"), pc.RunHeartbeat)
	}
	if pc.LakeRetention < time.Hour {
		// The sweep removes unpublished run files older than the retention;
		// a shorter one could remove the parts of a run still being written.
		return fmt.Errorf("%s %s: want at least 1h, or the sweep may remove the files of runs still being written",
			keyName("pipeline.lake_retention"), pc.LakeRetention)
	}
	if _, err := pc.stageSpecs(); err != nil {
		return err
	}
	if _, err := pc.holidayStates(); err != nil {
		return err
	}
	if _, err := areaEICs("pipeline.tso_party", pc.TSOParty); err != nil {
		return err
	}
	_, err := areaEICs("pipeline.control_area_eic", pc.ControlAreaEIC)
	return err
}

func (mc MakoConfig) check() error {
	if a := mc.IMAP.Addr; a != "" {
		if strings.Contains(a, "://") {
			return fmt.Errorf("%s %q: want host or host:port, without a scheme", keyName("mako.imap.addr"), a)
		}
		if mc.IMAP.Username == "" || mc.IMAP.Password == "" {
			return fmt.Errorf("%s: an address needs %s and %s", keyName("mako.imap.addr"),
				keyName("mako.imap.username"), keyName("mako.imap.password"))
		}
	}
	for f, d := range mc.MailFolders {
		if d != "in" && d != "out" {
			return fmt.Errorf("%s[%q] = %q: want in or out", keyName("mako.mail_folders"), f, d)
		}
	}
	if e := mc.Self.Email; e != "" {
		if _, err := mail.ParseAddress(e); err != nil {
			return fmt.Errorf("%s %q: not an e-mail address", keyName("mako.self.email"), e)
		}
	}
	return nil
}

// checkHostPort checks a host:port address; the host may be empty where
// the address is one to listen on.
func checkHostPort(key, addr string, listen bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err != nil || n < 0 || n > 65535 {
			err = fmt.Errorf("port %q is not a number from 0 to 65535", port)
		} else if host == "" && !listen {
			err = errors.New("no host")
		}
	}
	if err != nil {
		return fmt.Errorf("%s %q: want host:port: %v", keyName(key), addr, unwrapAddrErr(err))
	}
	return nil
}

func unwrapAddrErr(err error) string {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return ae.Err
	}
	return err.Error()
}

// checkDatabaseURL checks the database URL's form. It never quotes the URL:
// it may hold a password.
func checkDatabaseURL(raw string) error {
	switch {
	case raw == "", strings.HasPrefix(raw, "sqlite:") && len(raw) > len("sqlite:"):
		return nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if u, err := url.Parse(raw); err != nil || u.Host == "" {
			return fmt.Errorf("%s: not a URL with a host (the value is not shown: it may hold a password)", keyName("database_url"))
		}
		return nil
	}
	return fmt.Errorf("%s: want postgres://..., postgresql://... or sqlite:PATH (the value is not shown: it may hold a password)", keyName("database_url"))
}

func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// field finds the field of a YAML key, and the map key when the YAML key
// names an entry of a map.
func field(c *Config, key string) (reflect.Value, reflect.StructField, string) {
	v := reflect.ValueOf(c).Elem()
	var sf reflect.StructField
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if v.Kind() == reflect.Map {
			return v, sf, strings.Join(parts[i:], ".")
		}
		found := false
		for j := 0; j < v.NumField(); j++ {
			if name, _, _ := strings.Cut(v.Type().Field(j).Tag.Get("yaml"), ","); name == p {
				sf, v, found = v.Type().Field(j), v.Field(j), true
				break
			}
		}
		if !found {
			panic("config: no YAML key " + key)
		}
	}
	return v, sf, ""
}

func isSecret(key string) bool {
	_, sf, _ := field(&Config{}, key)
	return sf.Tag.Get("secret") == "true"
}

var durationType = reflect.TypeOf(time.Duration(0))

// setKey sets a YAML key from an environment variable's text. Lists are
// comma-separated, maps comma-separated KEY=VALUE pairs.
func setKey(c *Config, key, s string) error {
	v, _, mapKey := field(c, key)
	if mapKey != "" {
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(reflect.ValueOf(mapKey), reflect.ValueOf(s))
		return nil
	}
	switch {
	case v.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return errors.New("want a duration such as 30s, 5m or 1h30m")
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return errors.New("want true or false")
		}
		v.SetBool(b)
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return errors.New("want an integer")
		}
		v.SetInt(n)
	case v.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return errors.New("want a number")
		}
		v.SetFloat(f)
	case v.Kind() == reflect.Slice:
		var list []string
		for _, item := range strings.Split(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, item)
			}
		}
		v.Set(reflect.ValueOf(list))
	case v.Kind() == reflect.Map:
		// The pairs add to the map's entries (its defaults, the file's),
		// as a YAML map does.
		m := map[string]string{}
		if !v.IsNil() {
			m = maps.Clone(v.Interface().(map[string]string))
		}
		for _, pair := range strings.Split(s, ",") {
			k, val, ok := strings.Cut(pair, "=")
			if k, val = strings.TrimSpace(k), strings.TrimSpace(val); !ok || k == "" {
				return errors.New("want KEY=VALUE pairs separated by commas")
			}
			m[k] = val
		}
		v.Set(reflect.ValueOf(m))
	default:
		panic("config: no environment form for " + key)
	}
	return nil
}

// redacted stands for a secret in the output of `schedbridge config`.
const redacted = "[redacted]"

// redact returns c with its secrets replaced: the fields tagged secret and
// the password of the database URL.
func redact(c Config) Config {
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := 0; i < v.NumField(); i++ {
			f, sf := v.Field(i), v.Type().Field(i)
			switch {
			case f.Kind() == reflect.Struct:
				walk(f)
			case sf.Tag.Get("secret") == "true" && f.String() != "":
				f.SetString(redacted)
			}
		}
	}
	walk(reflect.ValueOf(&c).Elem())
	c.DatabaseURL = redactURL(c.DatabaseURL)
	return c
}

// redactURL hides the password of a database URL, in its user information
// and in a password parameter.
func redactURL(raw string) string {
	if raw == "" || strings.HasPrefix(raw, "sqlite:") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return redacted
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "REDACTED")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// printConfig is `schedbridge config`: the effective configuration as YAML.
func (a *app) printConfig(ctx context.Context) error {
	b, err := yaml.Marshal(redact(a.cfg))
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(b)
	return err
}

// yamlError rewrites the YAML decoder's problems so that each names the
// key it is about, with its variable, instead of a Go type: the decoder
// says "line 3: cannot unmarshal !!str `soon` into time.Duration" and
// "line 4: field mpid not found in type main.MakoSelf".
func yamlError(text []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	var doc yaml.Node
	if yaml.Unmarshal(text, &doc) != nil {
		return err
	}
	// The keys of the file by the line of their value or, for an unknown
	// key, of the key itself.
	keys, values := map[int]string{}, map[int]string{}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
			walk(n.Content[0], prefix)
			return
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := strings.TrimPrefix(prefix+"."+k.Value, ".")
			keys[k.Line] = key
			if v.Line != k.Line {
				keys[v.Line] = key
			}
			if v.Kind == yaml.ScalarNode {
				values[v.Line] = v.Value
			}
			walk(v, key)
		}
	}
	walk(&doc, "")
	known := yamlLeafKeys(reflect.TypeOf(Config{}), "")
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = m
		var line int
		if _, err := fmt.Sscanf(m, "line %d:", &line); err != nil {
			continue
		}
		key, ok := keys[line]
		if !ok {
			continue
		}
		switch {
		case strings.Contains(m, " not found in type "):
			msgs[i] = fmt.Sprintf("line %d: unknown key %s", line, key)
			if near := nearest(key, known); near != "" {
				msgs[i] += fmt.Sprintf(" (did you mean %s?)", near)
			}
		case strings.Contains(m, "cannot unmarshal"):
			want, shown := "a value of another type", ""
			if _, sf, _ := fieldOf(key); sf.Type != nil {
				want = typeWant(sf.Type)
				if v, ok := values[line]; ok && sf.Tag.Get("secret") != "true" {
					shown = fmt.Sprintf(" %q", v)
				}
			}
			msgs[i] = fmt.Sprintf("line %d: %s%s: want %s", line, keyName(key), shown, want)
		}
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// fieldOf is field for a key read from a file, which may name no field.
func fieldOf(key string) (v reflect.Value, sf reflect.StructField, mapKey string) {
	defer func() {
		if recover() != nil {
			sf = reflect.StructField{}
		}
	}()
	return field(&Config{}, key)
}

// typeWant says in words what a field of type t takes.
func typeWant(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 30s, 5m or 1h30m"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return "an integer"
	case t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.Map:
		return "a map of names to values"
	}
	return "text"
}

// yamlLeafKeys lists the YAML keys of the configuration's leaves (maps and
// lists included), walking Config by reflection.
func yamlLeafKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		key := strings.TrimPrefix(prefix+"."+name, ".")
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			out = append(out, yamlLeafKeys(f.Type, key)...)
			continue
		}
		out = append(out, key)
	}
	return out
}

// nearest is the name of known closest to name by edit distance, the
// first of equals in known's order.
func nearest(name string, known []string) string {
	best, dist := "", -1
	for _, k := range known {
		if d := levenshtein.ComputeDistance(name, k); dist < 0 || d < dist {
			best, dist = k, d
		}
	}
	return best
}

// envWarning is a variable of the SCHEDBRIDGE_ prefix that no setting has.
type envWarning struct{ name, nearest string }

func (w envWarning) sentence() string {
	s := fmt.Sprintf("the environment variable %s is no setting of schedbridge and is ignored", w.name)
	if w.nearest != "" {
		s += fmt.Sprintf("; did you mean %s?", w.nearest)
	}
	return s
}

// kubernetesService matches the variables Kubernetes injects for a Service
// named schedbridge (SCHEDBRIDGE_SERVICE_HOST, SCHEDBRIDGE_PORT_8080_TCP,
// ...): they are not meant for schedbridge, and are not mistakes.
var kubernetesService = regexp.MustCompile(`^SCHEDBRIDGE_(SERVICE_(HOST|PORT)(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$`)

// unknownEnvVars finds the SCHEDBRIDGE_ variables of environ (NAME=VALUE
// pairs) that set nothing: a typo would otherwise leave its setting at the
// default without a word. They are warned about, not refused, since
// something else may have put them there.
func unknownEnvVars(environ []string) []envWarning {
	known := make([]string, len(envVars))
	for i, e := range envVars {
		known[i] = e.name
	}
	var out []envWarning
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "SCHEDBRIDGE_") || slices.Contains(known, name) || kubernetesService.MatchString(name) {
			continue
		}
		out = append(out, envWarning{name: name, nearest: nearest(name, known)})
	}
	return out
}
