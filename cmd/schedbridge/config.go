package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the whole configuration of the binary. Every subcommand reads the
// same configuration, so that `key create` and `serve` see the same database.
// Precedence: defaults, then the YAML file of --config, then the environment.
type Config struct {
	Addr            string        `yaml:"addr"`
	DataDir         string        `yaml:"data_dir"`
	DatabaseURL     string        `yaml:"database_url"`
	MaxBodyBytes    int64         `yaml:"max_body_bytes"`
	RateLimit       float64       `yaml:"rate_limit"`
	RateBurst       int           `yaml:"rate_burst"`
	RetryAfter      time.Duration `yaml:"retry_after"`
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	DrainGrace      time.Duration `yaml:"drain_grace"`
	LogLevel        string        `yaml:"log_level"`
	LogFormat       string        `yaml:"log_format"`
}

func defaultConfig() Config {
	return Config{
		Addr:            "127.0.0.1:8080",
		DataDir:         "./var",
		MaxBodyBytes:    64 << 20,
		RateLimit:       50,
		RetryAfter:      5 * time.Second,
		ShutdownTimeout: 30 * time.Second,
		LogLevel:        "info",
		LogFormat:       "json",
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
	{"SCHEDBRIDGE_RATE_LIMIT", func(c *Config, v string) (err error) { c.RateLimit, err = strconv.ParseFloat(v, 64); return }},
	{"SCHEDBRIDGE_RATE_BURST", func(c *Config, v string) (err error) { c.RateBurst, err = strconv.Atoi(v); return }},
	{"SCHEDBRIDGE_RETRY_AFTER", func(c *Config, v string) (err error) { c.RetryAfter, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_SHUTDOWN_TIMEOUT", func(c *Config, v string) (err error) { c.ShutdownTimeout, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_DRAIN_GRACE", func(c *Config, v string) (err error) { c.DrainGrace, err = time.ParseDuration(v); return }},
	{"SCHEDBRIDGE_LOG_LEVEL", func(c *Config, v string) error { c.LogLevel = v; return nil }},
	{"SCHEDBRIDGE_LOG_FORMAT", func(c *Config, v string) error { c.LogFormat = v; return nil }},
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
	if c.MaxBodyBytes <= 0 {
		return c, fmt.Errorf("max_body_bytes must be positive, got %d", c.MaxBodyBytes)
	}
	return c, nil
}
