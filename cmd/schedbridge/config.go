package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/schedbridge/schedbridge/jobs"
)

// Config is the whole configuration of the binary. Every subcommand reads the
// same configuration, so that `key create` and `serve` see the same database.
// Precedence: defaults, then the YAML file of --config, then the environment.
type Config struct {
	Addr            string         `yaml:"addr"`
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
	Environment string       `yaml:"environment"`
	Portal      PortalConfig `yaml:"portal"`
}

// S3Config selects the bucket. Without an endpoint the bucket is the local
// directory <data_dir>/bucket.
type S3Config struct {
	Endpoint  string `yaml:"endpoint"`
	Bucket    string `yaml:"bucket"`
	AccessKey string `yaml:"access_key"`
	SecretKey string `yaml:"secret_key"`
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
	WebhookToken string `yaml:"webhook_token"`
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
	Password string   `yaml:"password"`
	Security string   `yaml:"security"` // tls (default), starttls, none (loopback only)
	Folders  []string `yaml:"folders"`
}

func defaultConfig() Config {
	return Config{
		Addr:            "127.0.0.1:8080",
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
		Pipeline:        PipelineConfig{Scheduler: true, Attempts: 3, Backoff: 30 * time.Second, HistoryWeeks: 8, Compression: "zstd", RunHeartbeat: jobs.DefaultHeartbeat, RunStaleAfter: jobs.DefaultStaleAfter, LeaderPoll: jobs.DefaultLeaderPoll},
		Mako:            MakoConfig{Sync: true, Interval: 5 * time.Minute, Self: MakoSelf{PartinProcessID: "37000"}, IMAP: IMAPConfig{Security: "tls"}},
		Environment:     "production",
		Portal: PortalConfig{Enabled: true, SessionIdle: 30 * time.Minute, SessionAbsolute: 12 * time.Hour,
			MagicLinkTTL: 15 * time.Minute, MagicLinksPerHour: 5, SMTP: PortalSMTP{Security: "starttls"}},
	}
}

// envVar binds one environment variable to a field.
type envVar struct {
	name  string
	apply func(c *Config, v string) error
}

var envVars = []envVar{
	{"SCHEDBRIDGE_ADDR", func(c *Config, v string) error { c.Addr = v; return nil }},
	{"SCHEDBRIDGE_DATA_DIR", func(c *Config, v string) error { c.DataDir = v; return nil }},
	{"SCHEDBRIDGE_DATABASE_URL", func(c *Config, v string) error { c.DatabaseURL = v; return nil }},
	{"SCHEDBRIDGE_MAX_BODY_BYTES", func(c *Config, v string) (err error) { c.MaxBodyBytes, err = strconv.ParseInt(v, 10, 64); return }},
	{"SCHEDBRIDGE_READ_TIMEOUT", func(c *Config, v string) (err error) { c.ReadTimeout, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_WRITE_TIMEOUT", func(c *Config, v string) (err error) { c.WriteTimeout, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_RATE_LIMIT", func(c *Config, v string) (err error) { c.RateLimit, err = strconv.ParseFloat(v, 64); return }},
	{"SCHEDBRIDGE_RATE_BURST", func(c *Config, v string) (err error) { c.RateBurst, err = strconv.Atoi(v); return }},
	{"SCHEDBRIDGE_RETRY_AFTER", func(c *Config, v string) (err error) { c.RetryAfter, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_SHUTDOWN_TIMEOUT", func(c *Config, v string) (err error) { c.ShutdownTimeout, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_DRAIN_GRACE", func(c *Config, v string) (err error) { c.DrainGrace, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_LOG_LEVEL", func(c *Config, v string) error { c.LogLevel = v; return nil }},
	{"SCHEDBRIDGE_LOG_FORMAT", func(c *Config, v string) error { c.LogFormat = v; return nil }},
	{"SCHEDBRIDGE_S3_ENDPOINT", func(c *Config, v string) error { c.S3.Endpoint = v; return nil }},
	{"SCHEDBRIDGE_S3_BUCKET", func(c *Config, v string) error { c.S3.Bucket = v; return nil }},
	{"SCHEDBRIDGE_S3_ACCESS_KEY", func(c *Config, v string) error { c.S3.AccessKey = v; return nil }},
	{"SCHEDBRIDGE_S3_SECRET_KEY", func(c *Config, v string) error { c.S3.SecretKey = v; return nil }},
	{"SCHEDBRIDGE_S3_USE_SSL", func(c *Config, v string) (err error) { c.S3.UseSSL, err = strconv.ParseBool(v); return }},
	{"SCHEDBRIDGE_S3_REGION", func(c *Config, v string) error { c.S3.Region = v; return nil }},
	{"SCHEDBRIDGE_INBOX", func(c *Config, v string) (err error) { c.Inbox.Enabled, err = strconv.ParseBool(v); return }},
	{"SCHEDBRIDGE_INBOX_INTERVAL", func(c *Config, v string) (err error) { c.Inbox.Interval, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_INBOX_LEASE", func(c *Config, v string) (err error) { c.Inbox.Lease, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_INBOX_MAX_ATTEMPTS", func(c *Config, v string) (err error) { c.Inbox.MaxAttempts, err = strconv.Atoi(v); return }},
	{"SCHEDBRIDGE_INBOX_MAX_FILE_BYTES", func(c *Config, v string) (err error) { c.Inbox.MaxFileBytes, err = strconv.ParseInt(v, 10, 64); return }},
	{"SCHEDBRIDGE_INBOX_WEBHOOK_TOKEN", func(c *Config, v string) error { c.Inbox.WebhookToken = v; return nil }},
	{"SCHEDBRIDGE_INBOX_WEBHOOK_OPEN", func(c *Config, v string) (err error) { c.Inbox.WebhookOpen, err = strconv.ParseBool(v); return }},
	{"SCHEDBRIDGE_SCHEDULER", func(c *Config, v string) (err error) { c.Pipeline.Scheduler, err = strconv.ParseBool(v); return }},
	{"SCHEDBRIDGE_STAGE_ATTEMPTS", func(c *Config, v string) (err error) { c.Pipeline.Attempts, err = strconv.Atoi(v); return }},
	{"SCHEDBRIDGE_STAGE_BACKOFF", func(c *Config, v string) (err error) { c.Pipeline.Backoff, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_HISTORY_WEEKS", func(c *Config, v string) (err error) { c.Pipeline.HistoryWeeks, err = strconv.Atoi(v); return }},
	{"SCHEDBRIDGE_PARQUET_COMPRESSION", func(c *Config, v string) error { c.Pipeline.Compression = v; return nil }},
	{"SCHEDBRIDGE_RUN_HEARTBEAT", func(c *Config, v string) (err error) { c.Pipeline.RunHeartbeat, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_RUN_STALE_AFTER", func(c *Config, v string) (err error) { c.Pipeline.RunStaleAfter, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_LEADER_POLL", func(c *Config, v string) (err error) { c.Pipeline.LeaderPoll, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_MAKO_SYNC", func(c *Config, v string) (err error) { c.Mako.Sync, err = strconv.ParseBool(v); return }},
	{"SCHEDBRIDGE_MAKO_INTERVAL", func(c *Config, v string) (err error) { c.Mako.Interval, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_MAKO_MP_ID", func(c *Config, v string) error { c.Mako.Self.MPID = v; return nil }},
	{"SCHEDBRIDGE_MAKO_BALANCING_GROUP", func(c *Config, v string) error { c.Mako.Self.BalancingGroup = v; return nil }},
	{"SCHEDBRIDGE_IMAP_ADDR", func(c *Config, v string) error { c.Mako.IMAP.Addr = v; return nil }},
	{"SCHEDBRIDGE_IMAP_USERNAME", func(c *Config, v string) error { c.Mako.IMAP.Username = v; return nil }},
	{"SCHEDBRIDGE_IMAP_PASSWORD", func(c *Config, v string) error { c.Mako.IMAP.Password = v; return nil }},
	{"SCHEDBRIDGE_IMAP_SECURITY", func(c *Config, v string) error { c.Mako.IMAP.Security = v; return nil }},
	{"SCHEDBRIDGE_IMAP_FOLDERS", func(c *Config, v string) error { c.Mako.IMAP.Folders = strings.Split(v, ","); return nil }},
	{"SCHEDBRIDGE_ENVIRONMENT", func(c *Config, v string) error { c.Environment = v; return nil }},
	{"SCHEDBRIDGE_PORTAL", func(c *Config, v string) (err error) { c.Portal.Enabled, err = strconv.ParseBool(v); return }},
	{"SCHEDBRIDGE_PORTAL_BASE_URL", func(c *Config, v string) error { c.Portal.BaseURL = v; return nil }},
	{"SCHEDBRIDGE_PORTAL_INSECURE_COOKIES", func(c *Config, v string) (err error) { c.Portal.InsecureCookies, err = strconv.ParseBool(v); return }},
	{"SCHEDBRIDGE_PORTAL_SESSION_IDLE", func(c *Config, v string) (err error) { c.Portal.SessionIdle, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_PORTAL_SESSION_ABSOLUTE", func(c *Config, v string) (err error) { c.Portal.SessionAbsolute, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_PORTAL_MAGIC_LINK_TTL", func(c *Config, v string) (err error) { c.Portal.MagicLinkTTL, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_PORTAL_OIDC_ISSUER", func(c *Config, v string) error { c.Portal.OIDC.Issuer = v; return nil }},
	{"SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID", func(c *Config, v string) error { c.Portal.OIDC.ClientID = v; return nil }},
	{"SCHEDBRIDGE_PORTAL_OIDC_CLIENT_SECRET", func(c *Config, v string) error { c.Portal.OIDC.ClientSecret = v; return nil }},
	{"SCHEDBRIDGE_PORTAL_OIDC_NATIVE_CLIENT_ID", func(c *Config, v string) error { c.Portal.OIDC.NativeClientID = v; return nil }},
	{"SCHEDBRIDGE_PORTAL_OIDC_NATIVE_REDIRECT_URIS", func(c *Config, v string) error {
		c.Portal.OIDC.NativeRedirectURIs = strings.Split(v, ",")
		return nil
	}},
	{"SCHEDBRIDGE_PORTAL_SMTP_ADDR", func(c *Config, v string) error { c.Portal.SMTP.Addr = v; return nil }},
	{"SCHEDBRIDGE_PORTAL_SMTP_FROM", func(c *Config, v string) error { c.Portal.SMTP.From = v; return nil }},
	{"SCHEDBRIDGE_PORTAL_SMTP_USERNAME", func(c *Config, v string) error { c.Portal.SMTP.Username = v; return nil }},
	{"SCHEDBRIDGE_PORTAL_SMTP_PASSWORD", func(c *Config, v string) error { c.Portal.SMTP.Password = v; return nil }},
	{"SCHEDBRIDGE_PORTAL_SMTP_SECURITY", func(c *Config, v string) error { c.Portal.SMTP.Security = v; return nil }},
}

// loadConfig builds the configuration from the optional YAML file and the
// environment (getenv is os.Getenv outside tests).
func loadConfig(path string, getenv func(string) string) (Config, error) {
	c := defaultConfig()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			return c, fmt.Errorf("config %s: %w", path, err)
		}
	}
	for _, e := range envVars {
		if v := getenv(e.name); v != "" {
			if err := e.apply(&c, v); err != nil {
				return c, fmt.Errorf("%s=%q: %w", e.name, v, err)
			}
		}
	}
	if err := c.checkPortal(); err != nil {
		return c, err
	}
	if c.MaxBodyBytes <= 0 {
		return c, fmt.Errorf("max_body_bytes must be positive, got %d", c.MaxBodyBytes)
	}
	if c.ReadTimeout <= 0 || c.WriteTimeout <= 0 {
		return c, fmt.Errorf("read_timeout and write_timeout must be positive")
	}
	if c.Inbox.WebhookOpen && c.Inbox.WebhookToken != "" {
		return c, fmt.Errorf("inbox: webhook_open and webhook_token exclude each other; with a token the webhook is not open")
	}
	if c.Inbox.Interval <= 0 || c.Inbox.Lease < 3*time.Second || c.Inbox.MaxFileBytes <= 0 || c.Inbox.MaxAttempts < 1 {
		return c, fmt.Errorf("inbox: interval and max_file_bytes must be positive, max_attempts at least 1 and the lease at least 3s")
	}
	if c.Pipeline.Attempts < 1 || c.Pipeline.Backoff <= 0 || c.Pipeline.HistoryWeeks < 1 {
		return c, fmt.Errorf("pipeline: attempts and history_weeks must be at least 1 and backoff positive")
	}
	if p := c.Pipeline; p.RunHeartbeat <= 0 || p.LeaderPoll <= 0 || p.RunStaleAfter < 2*p.RunHeartbeat {
		return c, fmt.Errorf("pipeline: run_heartbeat and leader_poll must be positive and run_stale_after at least twice "+
			"run_heartbeat (got %s and %s), or live runs are failed", p.RunHeartbeat, p.RunStaleAfter)
	}
	if c.Pipeline.Compression != "zstd" && c.Pipeline.Compression != "snappy" {
		return c, fmt.Errorf("pipeline.compression %q: want zstd or snappy", c.Pipeline.Compression)
	}
	if c.Mako.Interval <= 0 {
		return c, fmt.Errorf("mako.interval must be positive")
	}
	if sec := c.Mako.IMAP.Security; sec != "tls" && sec != "starttls" && sec != "none" {
		return c, fmt.Errorf("mako.imap.security %q: want tls, starttls or none", sec)
	}
	if c.Mako.IMAP.Addr != "" && (c.Mako.IMAP.Username == "" || c.Mako.IMAP.Password == "") {
		return c, fmt.Errorf("mako.imap: an address needs a username and a password")
	}
	for f, d := range c.Mako.MailFolders {
		if d != "in" && d != "out" {
			return c, fmt.Errorf("mako.mail_folders[%q] = %q: want in or out", f, d)
		}
	}
	if c.S3.Endpoint != "" && (c.S3.AccessKey == "" || c.S3.SecretKey == "" || c.S3.Bucket == "") {
		return c, fmt.Errorf("s3: an endpoint needs a bucket, an access key and a secret key")
	}
	return c, nil
}
