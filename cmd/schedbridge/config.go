package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/mail"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/schedbridge/schedbridge/jobs"
)

// Config is the whole configuration of the binary. Every subcommand reads the
// same configuration, so that `key create` and `serve` see the same database.
// Precedence: defaults, then the YAML file of --config, then the environment.
// Every YAML key has an environment variable (envVars); the fields tagged
// secret are redacted by `schedbridge config`.
type Config struct {
	Addr            string         `yaml:"addr"`
	MetricsAddr     string         `yaml:"metrics_addr"` // GET /metrics, on a listener apart from the API's
	DataDir         string         `yaml:"data_dir"`
	DatabaseURL     string         `yaml:"database_url"`
	MaxBodyBytes    int64          `yaml:"max_body_bytes"`
	ReadTimeout     time.Duration  `yaml:"read_timeout"`
	WriteTimeout    time.Duration  `yaml:"write_timeout"`
	RateLimit       float64        `yaml:"rate_limit"`
	RateBurst       int            `yaml:"rate_burst"`
	RetryAfter      time.Duration  `yaml:"retry_after"`
	ShutdownTimeout time.Duration  `yaml:"shutdown_timeout"`
	DrainGrace      time.Duration  `yaml:"drain_grace"`
	LogLevel        string         `yaml:"log_level"`
	LogFormat       string         `yaml:"log_format"`
	S3              S3Config       `yaml:"s3"`
	Inbox           InboxConfig    `yaml:"inbox"`
	Pipeline        PipelineConfig `yaml:"pipeline"`
	Mako            MakoConfig     `yaml:"mako"`
	// Environment marks the deployment: "production" (the default) or
	// "development". Production refuses the portal's insecure cookies.
	Environment string        `yaml:"environment"`
	Portal      PortalConfig  `yaml:"portal"`
	Console     ConsoleConfig `yaml:"console"`
}

// ConsoleConfig tunes the operators' web console under /console/, which
// signs staff in through the portal's single sign-on.
type ConsoleConfig struct {
	// OperatorGroups are the values of the provider's groups claim
	// (portal.oidc.groups_claim) that make a person an operator; beside
	// them, the operator list kept with `schedbridge operator` does.
	OperatorGroups []string `yaml:"operator_groups"`
}

// S3Config selects the bucket. Without an endpoint the bucket is the local
// directory <data_dir>/bucket.
type S3Config struct {
	Endpoint  string `yaml:"endpoint"`
	Bucket    string `yaml:"bucket"`
	AccessKey string `yaml:"access_key"`
	SecretKey string `yaml:"secret_key" secret:"true"`
	UseSSL    bool   `yaml:"use_ssl"`
	Region    string `yaml:"region"`
}

// InboxConfig tunes the bulk inbox that serve runs.
type InboxConfig struct {
	Enabled      bool          `yaml:"enabled"`
	Interval     time.Duration `yaml:"interval"`
	Lease        time.Duration `yaml:"lease"`
	MaxFileBytes int64         `yaml:"max_file_bytes"`
	// MaxAttempts is how often a file is tried when its processing fails
	// for reasons that are not the file's fault, before it is failed and
	// left for an operator to retry (GET /v1/console/inbox?state=failed).
	MaxAttempts  int    `yaml:"max_attempts"`
	WebhookToken string `yaml:"webhook_token" secret:"true"`
	WebhookOpen  bool   `yaml:"webhook_open"`
}

// MakoConfig configures the market communication with the DSOs.
type MakoConfig struct {
	// Sync runs the channel sync in serve every Interval (default 5 min).
	Sync     bool          `yaml:"sync"`
	Interval time.Duration `yaml:"interval"`
	Self     MakoSelf      `yaml:"self"`
	// MailFolders maps folder names to "in" or "out"; unlisted folders hold
	// received mail. The default knows INBOX, Sent, Gesendet and Gesendete
	// Elemente.
	MailFolders map[string]string `yaml:"mail_folders"`
	IMAP        IMAPConfig        `yaml:"imap"`
}

// MakoSelf is our identity as sender of PARTIN and Zuordnungsermaechtigung.
type MakoSelf struct {
	MPID            string   `yaml:"mp_id"`
	Name            string   `yaml:"name"`
	Street          string   `yaml:"street"`
	PostalCode      string   `yaml:"postal_code"`
	City            string   `yaml:"city"`
	ContactName     string   `yaml:"contact_name"`
	Email           string   `yaml:"email"`
	Phone           string   `yaml:"phone"`
	PartinProcessID string   `yaml:"partin_process_id"`
	BalancingGroup  string   `yaml:"balancing_group"`
	Supplier        string   `yaml:"supplier"`
	SeriesTypes     []string `yaml:"series_types"`
}

// IMAPConfig is the mailbox synced for the mail channel; no address, no
// IMAP sync (the .eml files of inbox/mail/ are still read).
type IMAPConfig struct {
	Addr     string   `yaml:"addr"`
	Username string   `yaml:"username"`
	Password string   `yaml:"password" secret:"true"`
	Security string   `yaml:"security"` // tls (default), starttls, none (loopback only)
	Folders  []string `yaml:"folders"`
}

func defaultConfig() Config {
	return Config{
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
}

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
			return c, fmt.Errorf("config %s: %w", path, err)
		}
	}
	for _, e := range envVars {
		if v := getenv(e.name); v != "" {
			if err := setKey(&c, e.key, v); err != nil {
				if isSecret(e.key) {
					return c, fmt.Errorf("%s: %w", e.name, err)
				}
				return c, fmt.Errorf("%s=%q: %w", e.name, v, err)
			}
		}
	}
	if err := c.check(); err != nil {
		return c, err
	}
	return c, nil
}

// check validates the merged configuration. Messages name the YAML key and
// its variable; they quote a value only where it cannot be a secret.
func (c *Config) check() error {
	var (
		positive = func(key string, d time.Duration) error {
			if d <= 0 {
				return fmt.Errorf("%s %s: want a positive duration", keyName(key), d)
			}
			return nil
		}
		oneOf = func(key, v string, want ...string) error {
			if !slices.Contains(want, v) {
				return fmt.Errorf("%s %q: want %s", keyName(key), v, orList(want))
			}
			return nil
		}
	)
	if err := checkHostPort("addr", c.Addr, true); err != nil {
		return err
	}
	if err := checkHostPort("metrics_addr", c.MetricsAddr, true); err != nil {
		return err
	}
	if c.DataDir == "" {
		return fmt.Errorf("%s: must not be empty", keyName("data_dir"))
	}
	if err := checkDatabaseURL(c.DatabaseURL); err != nil {
		return err
	}
	if c.MaxBodyBytes <= 0 {
		return fmt.Errorf("%s must be positive, got %d", keyName("max_body_bytes"), c.MaxBodyBytes)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"read_timeout", c.ReadTimeout}, {"write_timeout", c.WriteTimeout}, {"retry_after", c.RetryAfter},
		{"shutdown_timeout", c.ShutdownTimeout}, {"inbox.interval", c.Inbox.Interval}, {"pipeline.backoff", c.Pipeline.Backoff},
		{"mako.interval", c.Mako.Interval}} {
		if err := positive(d.key, d.v); err != nil {
			return err
		}
	}
	if c.DrainGrace < 0 {
		return fmt.Errorf("%s %s: must not be negative", keyName("drain_grace"), c.DrainGrace)
	}
	if c.RateLimit < 0 || c.RateBurst < 0 {
		return fmt.Errorf("%s and %s must not be negative", keyName("rate_limit"), keyName("rate_burst"))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("%s %q: want debug, info, warn or error", keyName("log_level"), c.LogLevel)
	}
	if err := oneOf("log_format", c.LogFormat, "json", "text"); err != nil {
		return err
	}
	if err := oneOf("environment", c.Environment, "production", "development"); err != nil {
		return err
	}
	if e := c.S3.Endpoint; e != "" && (strings.Contains(e, "/") || strings.ContainsAny(e, " \t")) {
		return fmt.Errorf("%s %q: want host or host:port, without a scheme (s3.use_ssl selects https)", keyName("s3.endpoint"), e)
	}
	if c.S3.Endpoint != "" && (c.S3.AccessKey == "" || c.S3.SecretKey == "" || c.S3.Bucket == "") {
		return fmt.Errorf("s3: an endpoint needs a bucket, an access key and a secret key")
	}
	if c.Inbox.WebhookOpen && c.Inbox.WebhookToken != "" {
		return fmt.Errorf("inbox: webhook_open and webhook_token exclude each other; with a token the webhook is not open")
	}
	if c.Inbox.Lease < 3*time.Second {
		return fmt.Errorf("%s %s: want at least 3s", keyName("inbox.lease"), c.Inbox.Lease)
	}
	if c.Inbox.MaxFileBytes <= 0 || c.Inbox.MaxAttempts < 1 {
		return fmt.Errorf("inbox: %s must be positive and %s at least 1", keyName("inbox.max_file_bytes"), keyName("inbox.max_attempts"))
	}
	if err := c.Pipeline.check(); err != nil {
		return err
	}
	if err := c.Mako.check(); err != nil {
		return err
	}
	return c.checkPortal()
}

func (pc PipelineConfig) check() error {
	if pc.Attempts < 1 || pc.HistoryWeeks < 1 {
		return fmt.Errorf("pipeline: %s and %s must be at least 1", keyName("pipeline.attempts"), keyName("pipeline.history_weeks"))
	}
	if pc.Compression != "zstd" && pc.Compression != "snappy" {
		return fmt.Errorf("%s %q: want zstd or snappy", keyName("pipeline.compression"), pc.Compression)
	}
	if pc.RunHeartbeat <= 0 || pc.LeaderPoll <= 0 || pc.RunStaleAfter < 2*pc.RunHeartbeat {
		// A threshold under two heartbeats would fail runs that are alive
		// but whose refresh was merely late.
		return fmt.Errorf("pipeline: %s and %s must be positive and %s at least twice the heartbeat (got %s and %s), or live runs are failed",
			keyName("pipeline.run_heartbeat"), keyName("pipeline.leader_poll"), keyName("pipeline.run_stale_after"), pc.RunHeartbeat, pc.RunStaleAfter)
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
	if sec := mc.IMAP.Security; sec != "tls" && sec != "starttls" && sec != "none" {
		return fmt.Errorf("%s %q: want tls, starttls or none", keyName("mako.imap.security"), sec)
	}
	if a := mc.IMAP.Addr; a != "" {
		if strings.Contains(a, "://") {
			return fmt.Errorf("%s %q: want host or host:port, without a scheme", keyName("mako.imap.addr"), a)
		}
		if mc.IMAP.Username == "" || mc.IMAP.Password == "" {
			return fmt.Errorf("mako.imap: an address needs a username and a password")
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
		m := map[string]string{}
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
