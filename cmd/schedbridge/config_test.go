package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// configFile writes a YAML configuration for a test and returns its path,
// or "" for an empty text: no --config.
func configFile(t *testing.T, text string) string {
	t.Helper()
	if text == "" {
		return ""
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEveryKeyHasAnEnvVar: each YAML key of Config can be set from the
// environment (a map through one variable or one per entry), and each
// variable sets the key it names.
func TestEveryKeyHasAnEnvVar(t *testing.T) {
	keys := yamlLeafKeys(reflect.TypeOf(Config{}), "")
	if len(keys) < 70 {
		t.Fatalf("only %d keys found", len(keys))
	}
	for _, k := range keys {
		found := false
		for _, e := range envVars {
			if e.key == k || strings.HasPrefix(e.key, k+".") {
				found = true
			}
		}
		if !found {
			t.Errorf("YAML key %s has no environment variable", k)
		}
	}
	names := map[string]bool{}
	for _, e := range envVars {
		if names[e.name] || !strings.HasPrefix(e.name, "SCHEDBRIDGE_") {
			t.Errorf("variable %s: duplicate or without the SCHEDBRIDGE_ prefix", e.name)
		}
		names[e.name] = true
		// A value of the field's kind set through the variable lands in the
		// field, and nowhere else.
		c := defaultConfig()
		v, _, mapKey := field(&c, e.key)
		var text string
		var want any
		switch {
		case mapKey != "":
			text, want = "0 6 * * *", "0 6 * * *"
		case v.Type() == durationType:
			text, want = "17m", 17*time.Minute
		case v.Kind() == reflect.String:
			text, want = "x-"+e.name, "x-"+e.name
		case v.Kind() == reflect.Bool:
			text, want = "false", false
			if !v.Bool() {
				text, want = "true", true
			}
		case v.Kind() == reflect.Int:
			text, want = "17", 17
		case v.Kind() == reflect.Int64:
			text, want = "17", int64(17)
		case v.Kind() == reflect.Float64:
			text, want = "1.5", 1.5
		case v.Kind() == reflect.Slice:
			text, want = "a, b", []string{"a", "b"}
		case v.Kind() == reflect.Map:
			// The pairs add to the defaults.
			m := map[string]string{"k1": "v1", "k2": "v2"}
			for _, k := range v.MapKeys() {
				m[k.String()] = v.MapIndex(k).String()
			}
			text, want = "k1=v1,k2=v2", m
		default:
			t.Fatalf("%s: kind %s", e.key, v.Kind())
		}
		set := defaultConfig()
		if err := setKey(&set, e.key, text); err != nil {
			t.Fatalf("%s=%q: %v", e.name, text, err)
		}
		gv, _, _ := field(&set, e.key)
		var have any = gv.Interface()
		if mapKey != "" {
			have = gv.MapIndex(reflect.ValueOf(mapKey)).Interface()
		}
		if !reflect.DeepEqual(have, want) {
			t.Errorf("%s=%q set %s to %v, want %v", e.name, text, e.key, have, want)
		}
		// Nothing but that key changed.
		after := set
		fv, _, _ := field(&after, e.key)
		orig, _, _ := field(&c, e.key)
		fv.Set(orig)
		if !reflect.DeepEqual(after, c) {
			t.Errorf("%s changed more than %s", e.name, e.key)
		}
	}
}

// TestConfigRefused: a bad value in the environment or the YAML file
// refuses the start, naming the variable or key and what is wrong, and
// never echoing a secret.
func TestConfigRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		env    map[string]string
		yaml   string
		want   []string
		secret string
	}{
		{"log level", map[string]string{"SCHEDBRIDGE_LOG_LEVEL": "loud"}, "", []string{"SCHEDBRIDGE_LOG_LEVEL", "loud", "debug, info, warn or error"}, ""},
		{"log level yaml", nil, "log_level: chatty\n", []string{"log_level", "chatty"}, ""},
		{"log format", map[string]string{"SCHEDBRIDGE_LOG_FORMAT": "xml"}, "", []string{"SCHEDBRIDGE_LOG_FORMAT", "json or text"}, ""},
		{"duration", map[string]string{"SCHEDBRIDGE_READ_TIMEOUT": "60"}, "", []string{"SCHEDBRIDGE_READ_TIMEOUT", "duration"}, ""},
		{"duration yaml", nil, "inbox:\n  interval: soon\n", []string{"soon"}, ""},
		{"negative duration", map[string]string{"SCHEDBRIDGE_SHUTDOWN_TIMEOUT": "-1s"}, "", []string{"SCHEDBRIDGE_SHUTDOWN_TIMEOUT", "positive"}, ""},
		{"boolean", map[string]string{"SCHEDBRIDGE_S3_USE_SSL": "yes please"}, "", []string{"SCHEDBRIDGE_S3_USE_SSL", "true or false"}, ""},
		{"integer", map[string]string{"SCHEDBRIDGE_RATE_BURST": "1e3"}, "", []string{"SCHEDBRIDGE_RATE_BURST", "integer"}, ""},
		{"integer yaml", nil, "max_body_bytes: lots\n", []string{"lots"}, ""},
		{"address without port", map[string]string{"SCHEDBRIDGE_ADDR": "localhost"}, "", []string{"SCHEDBRIDGE_ADDR", "host:port"}, ""},
		{"address with bad port", map[string]string{"SCHEDBRIDGE_ADDR": "127.0.0.1:http8"}, "", []string{"SCHEDBRIDGE_ADDR", "0 to 65535"}, ""},
		{"environment", map[string]string{"SCHEDBRIDGE_ENVIRONMENT": "prod"}, "", []string{"SCHEDBRIDGE_ENVIRONMENT", "production or development"}, ""},
		{"compression", map[string]string{"SCHEDBRIDGE_PARQUET_COMPRESSION": "gzip"}, "", []string{"SCHEDBRIDGE_PARQUET_COMPRESSION", "zstd or snappy"}, ""},
		{"imap security", map[string]string{"SCHEDBRIDGE_IMAP_SECURITY": "ssl"}, "", []string{"SCHEDBRIDGE_IMAP_SECURITY", "tls, starttls or none"}, ""},
		{"smtp security", map[string]string{"SCHEDBRIDGE_PORTAL_SMTP_SECURITY": "ssl"}, "", []string{"SCHEDBRIDGE_PORTAL_SMTP_SECURITY", "starttls, tls or none"}, ""},
		{"smtp address", map[string]string{"SCHEDBRIDGE_PORTAL_SMTP_ADDR": "mail.example.de", "SCHEDBRIDGE_PORTAL_SMTP_FROM": "p@example.de"}, "", []string{"SCHEDBRIDGE_PORTAL_SMTP_ADDR", "host:port"}, ""},
		{"smtp sender", map[string]string{"SCHEDBRIDGE_PORTAL_SMTP_ADDR": "mail.example.de:587", "SCHEDBRIDGE_PORTAL_SMTP_FROM": "portal"}, "", []string{"SCHEDBRIDGE_PORTAL_SMTP_FROM"}, ""},
		{"issuer URL", map[string]string{"SCHEDBRIDGE_PORTAL_OIDC_ISSUER": "login.example.de", "SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID": "c"}, "", []string{"SCHEDBRIDGE_PORTAL_OIDC_ISSUER", "URL"}, ""},
		{"base URL", map[string]string{"SCHEDBRIDGE_PORTAL_BASE_URL": "portal.example.de"}, "", []string{"SCHEDBRIDGE_PORTAL_BASE_URL", "origin"}, ""},
		{"s3 endpoint with scheme", map[string]string{"SCHEDBRIDGE_S3_ENDPOINT": "https://s3.example.de"}, "", []string{"SCHEDBRIDGE_S3_ENDPOINT", "without a scheme"}, ""},
		{"mail folder direction", map[string]string{"SCHEDBRIDGE_MAKO_MAIL_FOLDERS": "Archiv=both"}, "", []string{"SCHEDBRIDGE_MAKO_MAIL_FOLDERS", "in or out"}, ""},
		{"map syntax", map[string]string{"SCHEDBRIDGE_HOLIDAY_STATES": "MGA1"}, "", []string{"SCHEDBRIDGE_HOLIDAY_STATES", "KEY=VALUE"}, ""},
		{"holiday state", map[string]string{"SCHEDBRIDGE_HOLIDAY_STATES": "MGA1=XX"}, "", []string{"SCHEDBRIDGE_HOLIDAY_STATES", "MGA1"}, ""},
		{"schedule stage", nil, "pipeline:\n  schedule:\n    forcast: '0 9 * * *'\n", []string{"pipeline.schedule", "forcast"}, ""},
		{"tso party", map[string]string{"SCHEDBRIDGE_TSO_PARTY": "TenneT=nope"}, "", []string{"SCHEDBRIDGE_TSO_PARTY", "not an EIC"}, ""},
		{"mako email", map[string]string{"SCHEDBRIDGE_MAKO_EMAIL": "mako at example"}, "", []string{"SCHEDBRIDGE_MAKO_EMAIL", "e-mail"}, ""},
		{"unknown key", nil, "mako:\n  self:\n    mpid: '9900000000011'\n", []string{"line 3: unknown key mako.self.mpid (did you mean mako.self.mp_id?)"}, ""},
		{"database URL", map[string]string{"SCHEDBRIDGE_DATABASE_URL": "mysql://app:hunter2secret@db/app"}, "", []string{"SCHEDBRIDGE_DATABASE_URL", "postgres://"}, "hunter2secret"},
		{"database URL without host", map[string]string{"SCHEDBRIDGE_DATABASE_URL": "postgres://app:hunter2secret@/app"}, "", []string{"SCHEDBRIDGE_DATABASE_URL"}, "hunter2secret"},
		{"webhook token and open", map[string]string{"SCHEDBRIDGE_INBOX_WEBHOOK_TOKEN": "tok-hunter2secret", "SCHEDBRIDGE_INBOX_WEBHOOK_OPEN": "true"}, "", []string{"webhook_open"}, "hunter2secret"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := configFile(t, c.yaml)
			_, err := loadConfig(path, func(k string) string { return c.env[k] })
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			if c.secret != "" && strings.Contains(err.Error(), c.secret) {
				t.Errorf("the error shows the secret: %q", err)
			}
			// Every command refuses to start, with exit 2 and the same
			// message, before it opens anything.
			dir := filepath.Join(t.TempDir(), "data")
			env := map[string]string{"SCHEDBRIDGE_DATA_DIR": dir}
			for k, v := range c.env {
				env[k] = v
			}
			args := []string{"migrate"}
			if path != "" {
				args = append(args, "--config", path)
			}
			code, out, errOut := runCLI(t, func(k string) string { return env[k] }, args...)
			if code != 2 || out != "" || errOut != "schedbridge: "+oneLine(err)+"\n" {
				t.Errorf("migrate: exit %d, stderr %q", code, errOut)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("migrate touched the data directory")
			}
		})
	}
}

// TestConfigCommand: `schedbridge config` prints the effective
// configuration with the keys of the file, the environment applied and
// every secret redacted; what it prints loads back to the same
// configuration.
func TestConfigCommand(t *testing.T) {
	secrets := map[string]string{
		"SCHEDBRIDGE_S3_SECRET_KEY":             "s3-secret-0xA1",
		"SCHEDBRIDGE_IMAP_PASSWORD":             "imap-secret-0xB2",
		"SCHEDBRIDGE_PORTAL_OIDC_CLIENT_SECRET": "oidc-secret-0xC3",
		"SCHEDBRIDGE_PORTAL_SMTP_PASSWORD":      "smtp-secret-0xD4",
		"SCHEDBRIDGE_INBOX_WEBHOOK_TOKEN":       "webhook-secret-0xE5",
		"SCHEDBRIDGE_DATABASE_URL":              "postgres://app:db-secret-0xF6@db.internal:5432/app?sslmode=verify-full",
	}
	env := map[string]string{
		"SCHEDBRIDGE_S3_ENDPOINT": "minio.internal:9000", "SCHEDBRIDGE_S3_ACCESS_KEY": "schedbridge",
		"SCHEDBRIDGE_IMAP_ADDR": "imap.example.de:993", "SCHEDBRIDGE_IMAP_USERNAME": "mako",
		"SCHEDBRIDGE_PORTAL_OIDC_ISSUER": "https://login.example.de", "SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID": "portal",
		"SCHEDBRIDGE_PORTAL_SMTP_ADDR": "mail.example.de:587", "SCHEDBRIDGE_PORTAL_SMTP_FROM": "portal@example.de",
		"SCHEDBRIDGE_MAKO_NAME": "ACME Energie GmbH", "SCHEDBRIDGE_MAKO_SERIES_TYPES": "SLS,TLS",
		"SCHEDBRIDGE_SCHEDULE_FORECAST": "15 9 * * *",
	}
	for k, v := range secrets {
		env[k] = v
	}
	getenv, _ := cliEnv(t, env)
	code, out, errOut := runCLI(t, getenv, "config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for name, s := range secrets {
		secret := s
		if name == "SCHEDBRIDGE_DATABASE_URL" {
			secret = "db-secret-0xF6"
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("the output shows %s", name)
		}
	}
	if n := strings.Count(out, redacted); n != 5 {
		t.Errorf("%d values redacted, want 5:\n%s", n, out)
	}
	for _, want := range []string{"name: ACME Energie GmbH", "- TLS", "forecast: 15 9 * * *", "app:REDACTED@db.internal:5432", "log_level: info"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	// The output is a configuration file: strict decoding takes every key.
	var back Config
	dec := yaml.NewDecoder(strings.NewReader(out))
	dec.KnownFields(true)
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("the output does not decode as a configuration: %v", err)
	}
	// Without secrets, it loads back to what printed it.
	plainEnv := map[string]string{"SCHEDBRIDGE_MAKO_NAME": "ACME", "SCHEDBRIDGE_READ_TIMEOUT": "90s", "SCHEDBRIDGE_HOLIDAY_STATES": "MGA1=BY"}
	getenv, _ = cliEnv(t, plainEnv)
	_, first, _ := runCLI(t, getenv, "config")
	path := filepath.Join(t.TempDir(), "printed.yaml")
	if err := os.WriteFile(path, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	code, second, errOut := runCLI(t, func(string) string { return "" }, "--config", path, "config")
	if code != 0 || second != first {
		t.Errorf("loaded back: exit %d %s\n%s\n--- printed first:\n%s", code, errOut, second, first)
	}
}

// TestExampleConfig: the example configuration of deploy/ passes the checks.
func TestExampleConfig(t *testing.T) {
	if _, err := loadConfig("../../deploy/schedbridge.example.yaml", func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
}

// TestMailFoldersKeepDefaults: a folder named in the file or the
// environment adds to the folders whose direction is known by default,
// which the market communication then reads from the configuration alone.
func TestMailFoldersKeepDefaults(t *testing.T) {
	for _, c := range []struct {
		name string
		yaml string
		env  map[string]string
	}{
		{"yaml", "mako:\n  mail_folders:\n    Archiv: in\n", nil},
		{"environment", "", map[string]string{"SCHEDBRIDGE_MAKO_MAIL_FOLDERS": "Archiv=in"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(configFile(t, c.yaml), func(k string) string { return c.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Mako.MailFolders; got["Archiv"] != "in" || got["INBOX"] != "in" || got["Gesendete Elemente"] != "out" {
				t.Errorf("mail folders %v, want Archiv beside the defaults", got)
			}
		})
	}
}
