package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// composeFile is the part of the Compose specification that
// deploy/compose.yaml uses, typed, so that a strict decode rejects a
// misspelt or misplaced key (compose-go, the reference parser, is not
// served by the module proxy here). A key the file needs and this struct
// lacks must be added here deliberately, with its meaning from the spec.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]*struct{}      `yaml:"volumes"`
}

type composeService struct {
	Image           string                      `yaml:"image"`
	Command         []string                    `yaml:"command"`
	Environment     map[string]string           `yaml:"environment"`
	EnvFile         []string                    `yaml:"env_file"`
	Volumes         []string                    `yaml:"volumes"`
	Ports           []string                    `yaml:"ports"`
	Tmpfs           []string                    `yaml:"tmpfs"`
	ReadOnly        bool                        `yaml:"read_only"`
	NetworkMode     string                      `yaml:"network_mode"`
	DependsOn       map[string]composeDependsOn `yaml:"depends_on"`
	Healthcheck     *composeHealthcheck         `yaml:"healthcheck"`
	Restart         string                      `yaml:"restart"`
	StopGracePeriod string                      `yaml:"stop_grace_period"`
}

type composeDependsOn struct {
	Condition string `yaml:"condition"`
}

type composeHealthcheck struct {
	Test     []string `yaml:"test"`
	Interval string   `yaml:"interval"`
	Timeout  string   `yaml:"timeout"`
	Retries  int      `yaml:"retries"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var c composeFile
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

// readEnvFile reads a Compose env file: NAME=value lines, # comments.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: line %q is not NAME=value", path, line)
		}
		env[name] = value
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return env
}

// TestCompose checks deploy/compose.yaml without running it (no image can
// be pulled on these machines): the services the issue asks for, in the
// order they must start, every file and volume they name, and every
// variable a schedbridge is given one that the binary reads.
func TestCompose(t *testing.T) {
	c := loadCompose(t)
	known := binaryEnvNames(t)

	var names []string
	for n := range c.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"idp", "migrate", "minio", "postgres", "schedbridge-1", "schedbridge-2"}
	if !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	if img := c.Services["postgres"].Image; !strings.HasSuffix(img, "/postgres:15") && !strings.Contains(img, "/postgres:15.") {
		t.Errorf("postgres image %q: want PostgreSQL 15", img)
	}

	published := map[string]bool{}
	for name, s := range c.Services {
		for dep := range s.DependsOn {
			if _, ok := c.Services[dep]; !ok {
				t.Errorf("%s depends on the unknown service %s", name, dep)
			}
		}
		if target, ok := strings.CutPrefix(s.NetworkMode, "service:"); ok {
			if _, ok := c.Services[target]; !ok {
				t.Errorf("%s shares the network of the unknown service %s", name, target)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("%s mounts %s: %v", name, src, err)
				}
			} else if _, ok := c.Volumes[src]; !ok {
				t.Errorf("%s mounts the undeclared volume %s", name, src)
			}
		}
		for _, p := range s.Ports {
			parts := strings.Split(p, ":")
			if parts[0] != "127.0.0.1" {
				t.Errorf("%s publishes %s beyond loopback", name, p)
			}
			published[parts[len(parts)-1]] = true
		}
	}

	// The schedbridge services: the image `make image` builds, the
	// commands, the order, and the configuration.
	env := map[string]map[string]string{}
	for _, name := range []string{"migrate", "schedbridge-1", "schedbridge-2"} {
		s := c.Services[name]
		if !strings.HasPrefix(s.Image, "localhost/schedbridge:") || !s.ReadOnly {
			t.Errorf("%s: image %q read_only %v", name, s.Image, s.ReadOnly)
		}
		merged := map[string]string{}
		for _, f := range s.EnvFile {
			for k, v := range readEnvFile(t, f) {
				merged[k] = v
			}
		}
		for k, v := range s.Environment {
			merged[k] = v
		}
		for k := range merged {
			checkEnvName(t, known, name, k)
		}
		if merged["SCHEDBRIDGE_DATABASE_URL"] == "" || merged["SCHEDBRIDGE_S3_ENDPOINT"] == "" {
			t.Errorf("%s: no database URL or S3 endpoint", name)
		}
		env[name] = merged
	}
	if m := c.Services["migrate"]; !slices.Equal(m.Command, []string{"migrate"}) || m.Restart != "no" ||
		m.DependsOn["postgres"].Condition != "service_healthy" {
		t.Errorf("migrate: %+v", m)
	}
	for i, name := range []string{"schedbridge-1", "schedbridge-2"} {
		s := c.Services[name]
		if !slices.Equal(s.Command, []string{"serve"}) || s.DependsOn["migrate"].Condition != "service_completed_successfully" ||
			s.DependsOn["minio"].Condition != "service_healthy" {
			t.Errorf("%s: %+v", name, s)
		}
		port := []string{"8081", "8082"}[i]
		if env[name]["SCHEDBRIDGE_ADDR"] != "0.0.0.0:"+port || !published[port] {
			t.Errorf("%s: addr %q, port %s published %v", name, env[name]["SCHEDBRIDGE_ADDR"], port, published[port])
		}
	}

	// The replicas share the IdP's network namespace, so each listener
	// there needs a port of its own: the IdP's, the replicas' APIs and
	// their metrics listeners. A replica without SCHEDBRIDGE_METRICS_ADDR
	// would listen on the binary's default, 127.0.0.1:9090, and collide.
	listeners := map[string]string{}
	if m := regexp.MustCompile(`--port (\d+)`).FindStringSubmatch(strings.Join(c.Services["idp"].Command, " ")); m != nil {
		listeners[m[1]] = "idp"
	} else {
		t.Error("idp: no --port in its command")
	}
	for _, name := range []string{"schedbridge-1", "schedbridge-2"} {
		if c.Services[name].NetworkMode != "service:idp" {
			t.Errorf("%s: network_mode %q, want service:idp", name, c.Services[name].NetworkMode)
		}
		for _, v := range []string{"SCHEDBRIDGE_ADDR", "SCHEDBRIDGE_METRICS_ADDR"} {
			addr := env[name][v]
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Errorf("%s: %s %q: %v", name, v, addr, err)
				continue
			}
			if other, ok := listeners[port]; ok {
				t.Errorf("%s: %s %s takes the port of %s in the shared network namespace", name, v, addr, other)
			}
			listeners[port] = name + " " + v
			if v == "SCHEDBRIDGE_METRICS_ADDR" && !published[port] {
				t.Errorf("%s: the metrics port %s is not published on loopback", name, port)
			}
		}
	}

	// The IdP: the portal's test provider, serving the client that the
	// replicas are configured with, for both replicas' callbacks.
	idp := c.Services["idp"]
	if !slices.Contains(idp.Volumes, "./dev/portal:/idp:ro") || !strings.Contains(strings.Join(idp.Command, " "), "node /idp/idp.mjs") {
		t.Errorf("idp: %+v", idp)
	}
	var idpConf struct {
		Clients []struct {
			ClientID     string   `json:"client_id"`
			ClientSecret string   `json:"client_secret"`
			RedirectURIs []string `json:"redirect_uris"`
		} `json:"clients"`
	}
	b, err := os.ReadFile(filepath.Join("compose", "idp.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &idpConf); err != nil || len(idpConf.Clients) != 1 {
		t.Fatalf("compose/idp.json: %v", err)
	}
	client := idpConf.Clients[0]
	for _, name := range []string{"schedbridge-1", "schedbridge-2"} {
		e := env[name]
		if e["SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID"] != client.ClientID || e["SCHEDBRIDGE_PORTAL_OIDC_CLIENT_SECRET"] != client.ClientSecret {
			t.Errorf("%s: the OIDC client differs from compose/idp.json's", name)
		}
		callback := e["SCHEDBRIDGE_PORTAL_BASE_URL"] + "/portal/anmelden/sso/callback"
		if !slices.Contains(client.RedirectURIs, callback) {
			t.Errorf("%s: callback %s is not among the IdP client's redirect URIs %v", name, callback, client.RedirectURIs)
		}
		issuer := e["SCHEDBRIDGE_PORTAL_OIDC_ISSUER"]
		if !strings.Contains(strings.Join(idp.Command, " "), "--issuer "+issuer) {
			t.Errorf("%s: issuer %s is not the one the IdP serves", name, issuer)
		}
		if c.Services[name].NetworkMode != "service:idp" && strings.Contains(issuer, "localhost") {
			t.Errorf("%s: reaches the issuer %s on localhost without sharing the IdP's network", name, issuer)
		}
	}
}
