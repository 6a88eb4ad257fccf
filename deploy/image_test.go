package deploy_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

func TestMain(m *testing.M) {
	code := objtest.Main(objtest.RunFunc(func() int { return sqltest.Main(m) }))
	if trivialRoot != "" {
		os.RemoveAll(filepath.Dir(trivialRoot))
	}
	os.Exit(code)
}

// podmanGlobal are the flags podman needs on this kind of machine: crun,
// Debian's default, fails on the kernel's hybrid cgroup hierarchy, and
// without systemd as init podman cannot use the systemd cgroup manager.
var podmanGlobal = []string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}

// runFlags are the flags of every `podman run`: the host's network, so the
// container reaches PostgreSQL and MinIO on loopback (no CNI bridge is
// needed either), and explicit rlimits, because podman's default (nofile
// 1048576) is above the hard limit that this machine gives its processes
// and runc may not raise it ("error setting rlimits ... operation not
// permitted").
func runFlags() []string {
	nofile, nproc := uint64(16384), uint64(4096)
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Max < nofile {
		nofile = l.Max
	}
	const rlimitNproc = 6 // RLIMIT_NPROC on Linux
	if syscall.Getrlimit(rlimitNproc, &l) == nil && l.Max < nproc {
		nproc = l.Max
	}
	return []string{"--network=host",
		fmt.Sprintf("--ulimit=nofile=%d:%d", nofile, nofile),
		fmt.Sprintf("--ulimit=nproc=%d:%d", nproc, nproc)}
}

// tool runs podman or buildah with env added to the test's environment, so
// that secrets reach the container as `-e NAME` without a value and never
// stand on a command line.
func tool(t *testing.T, env []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if name == "podman" {
		args = append(append([]string{}, podmanGlobal...), args...)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// runHelp runs the binary's help in a container of image. It fails when
// the container does not print the usage. Whether such a failure is the
// image's or the machine's cannot be read from podman's message: a missing
// or non-executable entrypoint is reported as "runc create failed ... OCI
// runtime attempted to invoke a command that was not found" or "OCI
// permission denied", in the words of a broken runtime. So it starts a
// trivial container that needs nothing from any image (canRunContainers),
// and only when that fails too is the failure the machine's: skip is then
// the reason to skip, and err is nil.
func runHelp(t *testing.T, image string) (skip string, err error) {
	t.Helper()
	out, stderr, runErr := tool(t, nil, "podman", append(append([]string{"run", "--rm"}, runFlags()...), image, "help")...)
	if runErr == nil && strings.Contains(out+stderr, "Usage:") {
		return "", nil
	}
	if runErr == nil {
		return "", fmt.Errorf("help from the image printed no usage: %q %q", out, stderr)
	}
	if trivialErr := canRunContainers(t); trivialErr != nil {
		return fmt.Sprintf("podman cannot run any container on this machine: %v", trivialErr), nil
	}
	return "", fmt.Errorf("podman run %s help: %v\n%s", image, runErr, stderr)
}

var (
	trivialOnce sync.Once
	trivialRoot string
	trivialErr  error
)

// trivialRootfs is a root file system of one static program that exits 0,
// built once per test binary.
func trivialRootfs(t *testing.T) (string, error) {
	trivialOnce.Do(func() {
		dir, err := os.MkdirTemp("", "schedbridge-trivial-")
		if err != nil {
			trivialErr = err
			return
		}
		src := filepath.Join(dir, "main.go")
		if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
			trivialErr = err
			return
		}
		root := filepath.Join(dir, "rootfs")
		build := exec.Command("go", "build", "-o", filepath.Join(root, "true"), src)
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		if out, err := build.CombinedOutput(); err != nil {
			trivialErr = fmt.Errorf("go build of the trivial program: %v\n%s", err, out)
			return
		}
		trivialRoot = root
	})
	return trivialRoot, trivialErr
}

// canRunContainers starts the trivial container (podman run --rootfs with
// the flags of every run) and returns podman's error, if any.
func canRunContainers(t *testing.T) error {
	t.Helper()
	root, err := trivialRootfs(t)
	if err != nil {
		t.Fatal(err) // the test's own tooling, not the machine's container runtime
	}
	args := append(append([]string{"run", "--rm"}, runFlags()...), "--rootfs", root, "/true")
	if _, stderr, err := tool(t, nil, "podman", args...); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr))
	}
	return nil
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestImage builds the image as `make image` does (deploy/image/build.sh
// with the Containerfile), checks its metadata, then runs the binary's
// commands and the server from it against the test PostgreSQL and MinIO on
// loopback, read-only as Kubernetes runs it, and calls the API.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a container image")
	}
	for _, bin := range []string{"buildah", "podman", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found: deploy/dev/test-deps.sh installs it (make test-deps)", bin)
		}
	}
	dir := t.TempDir()
	binary := filepath.Join(dir, "schedbridge")
	build := exec.Command("go", "build", "-o", binary, "../cmd/schedbridge")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// A tag of its own per run, removed afterwards with every container
	// and anonymous volume made from it, so that repeated runs do not fill
	// the image store.
	suffix := randomSuffix(t)
	image := "localhost/schedbridge-test:" + suffix
	version := "test-" + suffix
	if _, stderr, err := tool(t, []string{"VERSION=" + version}, "../deploy/image/build.sh", binary, image); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, stderr)
	}
	var containers []string
	t.Cleanup(func() {
		for _, c := range containers {
			tool(t, nil, "podman", "rm", "--force", "--volumes", c)
		}
		if _, stderr, err := tool(t, nil, "podman", "rmi", "--force", image); err != nil {
			t.Logf("podman rmi %s: %v %s", image, err, stderr)
		}
	})

	checkImageConfig(t, image, version)
	checkImageFiles(t, image)

	// The first run is the binary's help, which needs nothing but the
	// image; it skips the test only when podman can run no container here.
	if skip, err := runHelp(t, image); err != nil {
		t.Fatal(err)
	} else if skip != "" {
		t.Skip(skip)
	}

	s3 := objtest.MinIO(t)
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	env := []string{
		"SCHEDBRIDGE_DATABASE_URL=" + sqltest.PostgresURL(t),
		"SCHEDBRIDGE_S3_ENDPOINT=" + s3.Endpoint, "SCHEDBRIDGE_S3_BUCKET=" + s3.Bucket,
		"SCHEDBRIDGE_S3_ACCESS_KEY=" + s3.AccessKey, "SCHEDBRIDGE_S3_SECRET_KEY=" + s3.SecretKey,
		"SCHEDBRIDGE_S3_REGION=" + s3.Region,
		"SCHEDBRIDGE_ADDR=" + addr, "SCHEDBRIDGE_METRICS_ADDR=" + metricsAddr,
		// Without IMAP and SMTP the market communication and the portal
		// have nothing to reach; the checks here are the API's.
		"SCHEDBRIDGE_MAKO_SYNC=false", "SCHEDBRIDGE_PORTAL=false",
	}
	envFlags := []string{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		envFlags = append(envFlags, "-e", name)
	}
	// oneShot runs a command of the binary in a fresh container, read-only
	// as in Kubernetes.
	oneShot := func(args ...string) string {
		t.Helper()
		full := append(append(append([]string{"run", "--rm", "--read-only"}, runFlags()...), envFlags...), image)
		out, stderr, err := tool(t, env, "podman", append(full, args...)...)
		if err != nil {
			t.Fatalf("podman run %v: %v\n%s", args, err, stderr)
		}
		return out
	}
	oneShot("migrate")
	oneShot("portfolio", "put", "acme", "--name", "ACME Energie", "--control-areas", "50Hertz,TenneT")
	key := strings.TrimSpace(oneShot("key", "create", "--scope", "data", "--portfolio", "acme", "--label", "image test"))
	if !strings.HasPrefix(key, "sbk_") {
		t.Fatalf("key create printed %q", key)
	}

	name := "schedbridge-test-" + suffix
	containers = append(containers, name)
	serve := append(append(append([]string{"run", "--detach", "--name", name, "--read-only"}, runFlags()...), envFlags...), image)
	if _, stderr, err := tool(t, env, "podman", serve...); err != nil {
		t.Fatalf("podman run serve: %v\n%s", err, stderr)
	}
	logs := func() string {
		o, e, _ := tool(t, nil, "podman", "logs", name)
		return o + e
	}
	base := "http://" + addr
	var ready map[string]any
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, body := get(base + "/readyz")
		if code == 200 {
			ready = body
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container never became ready (last %d %v); its log:\n%s", code, body, logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, check := range []string{"draining", "database", "migrations", "bucket"} {
		if ready["checks"].(map[string]any)[check] != "ok" {
			t.Errorf("readyz: %v", ready)
		}
	}
	if code, body := get(base + "/health"); code != 200 || body["database"] != "ok" {
		t.Errorf("health: %d %v", code, body)
	}
	if code, _ := get(base + "/livez"); code != 200 {
		t.Errorf("livez: %d", code)
	}
	// The metrics are on their own listener, not on the API's.
	if code, _ := get(base + "/metrics"); code != 404 {
		t.Errorf("GET /metrics on the API: %d, want 404", code)
	}
	if resp, err := http.Get("http://" + metricsAddr + "/metrics"); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET /metrics on the metrics listener: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// Submit a forecast with the key made in another container and read
	// it back: the API works on PostgreSQL and MinIO from the image.
	req, _ := http.NewRequest("POST", base+"/v1/forecasts", strings.NewReader(forecastBody("2026-03-29", 92)))
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	ack := doJSON(t, req, 200)
	if ack["status"] != "created" {
		t.Fatalf("submit: %v", ack)
	}
	req, _ = http.NewRequest("GET", base+"/v1/forecasts/2026-03-29", nil)
	req.Header.Set("X-API-Key", key)
	if got := doJSON(t, req, 200); got["input_hash"] != ack["input_hash"] {
		t.Errorf("read back: %v, submitted %v", got, ack)
	}

	// The server runs as the image's non-root user.
	if out, _, err := tool(t, nil, "podman", "top", name, "huser", "user"); err != nil || !strings.Contains(out, "65532") {
		t.Errorf("podman top: %v %q", err, out)
	}

	// podman stop sends SIGTERM to the binary (PID 1): it drains and
	// exits 0 well within the stop timeout.
	if _, stderr, err := tool(t, nil, "podman", "stop", "--time", "40", name); err != nil {
		t.Fatalf("podman stop: %v %s", err, stderr)
	}
	code, _, _ := tool(t, nil, "podman", "inspect", "--format", "{{.State.ExitCode}}", name)
	if strings.TrimSpace(code) != "0" || !strings.Contains(logs(), `"msg":"stopped"`) {
		t.Errorf("exit code %q after SIGTERM; log:\n%s", code, logs())
	}
}

// TestImageBrokenEntrypointFails: an image whose entrypoint is missing or
// not executable fails TestImage's first run, not skips it, although
// podman reports both in the words of a broken runtime ("runc create
// failed", "OCI runtime ..."). Only a machine on which even the trivial
// container cannot start skips.
func TestImageBrokenEntrypointFails(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs container images")
	}
	for _, bin := range []string{"buildah", "podman", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found: deploy/dev/test-deps.sh installs it (make test-deps)", bin)
		}
	}
	if err := canRunContainers(t); err != nil {
		t.Skipf("podman cannot run any container on this machine: %v", err)
	}
	root, err := trivialRootfs(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		chmod string // the entrypoint's mode; "" leaves it out of the image
	}{
		{"missing entrypoint", ""},
		{"entrypoint not executable", "0644"},
	} {
		t.Run(c.name, func(t *testing.T) {
			image := "localhost/schedbridge-broken:" + randomSuffix(t)
			out, stderr, err := tool(t, nil, "buildah", "from", "scratch")
			if err != nil {
				t.Fatalf("buildah from: %v %s", err, stderr)
			}
			ctr := strings.TrimSpace(out)
			defer tool(t, nil, "buildah", "rm", ctr)
			steps := [][]string{{"config", "--entrypoint", `["/usr/local/bin/schedbridge"]`, ctr}}
			if c.chmod != "" {
				steps = append(steps, []string{"copy", "--chmod", c.chmod, ctr, filepath.Join(root, "true"), "/usr/local/bin/schedbridge"})
			}
			steps = append(steps, []string{"commit", "--quiet", ctr, image})
			for _, args := range steps {
				if _, stderr, err := tool(t, nil, "buildah", args...); err != nil {
					t.Fatalf("buildah %v: %v %s", args, err, stderr)
				}
			}
			t.Cleanup(func() { tool(t, nil, "podman", "rmi", "--force", image) })

			skip, err := runHelp(t, image)
			if err == nil || skip != "" {
				t.Errorf("runHelp on the image (%s): skip %q, error %v; want a failure", c.name, skip, err)
			}
		})
	}
}

// checkImageConfig reads the image's configuration: OCI labels filled from
// git, the non-root user, the data volume and the defaults inside the image.
func checkImageConfig(t *testing.T, image, version string) {
	t.Helper()
	out, stderr, err := tool(t, nil, "podman", "image", "inspect", image)
	if err != nil {
		t.Fatalf("podman image inspect: %v %s", err, stderr)
	}
	var info []struct {
		Labels map[string]string
		Config struct {
			User       string
			Env        []string
			Entrypoint []string
			Cmd        []string
			Volumes    map[string]struct{}
		}
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil || len(info) != 1 {
		t.Fatalf("podman image inspect: %v %s", err, out)
	}
	img := info[0]
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":    "schedbridge",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": strings.TrimSpace(string(rev)),
		"org.opencontainers.image.source":   "https://github.com/schedbridge/schedbridge",
	}
	for k, v := range wantLabels {
		if img.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, img.Labels[k], v)
		}
	}
	created, err := time.Parse(time.RFC3339, img.Labels["org.opencontainers.image.created"])
	if err != nil || time.Since(created) > time.Hour || time.Until(created) > time.Minute {
		t.Errorf("label created = %q (%v)", img.Labels["org.opencontainers.image.created"], err)
	}
	if img.Labels["org.opencontainers.image.licenses"] == "" {
		t.Error("no licenses label")
	}
	if img.Config.User != "65532:65532" {
		t.Errorf("user %q", img.Config.User)
	}
	if _, ok := img.Config.Volumes["/var/lib/schedbridge"]; !ok {
		t.Errorf("volumes %v", img.Config.Volumes)
	}
	env := strings.Join(img.Config.Env, " ")
	for _, want := range []string{"SCHEDBRIDGE_ADDR=0.0.0.0:8080", "SCHEDBRIDGE_DATA_DIR=/var/lib/schedbridge"} {
		if !strings.Contains(env, want) {
			t.Errorf("env %v lacks %s", img.Config.Env, want)
		}
	}
	if strings.Join(img.Config.Entrypoint, " ") != "/usr/local/bin/schedbridge" || strings.Join(img.Config.Cmd, " ") != "serve" {
		t.Errorf("entrypoint %v cmd %v", img.Config.Entrypoint, img.Config.Cmd)
	}
}

// checkImageFiles reads the image's file system: the binary, the CA
// bundle, a sticky world-writable /tmp, and the data directory as the only
// one the runtime user owns. It reads the tar stream of `podman export` of
// a container created (never started) from the image, which works without
// a container runtime and without rights to mount the image's layers; any
// failure fails the test.
func checkImageFiles(t *testing.T, image string) {
	t.Helper()
	created, stderr, err := tool(t, nil, "podman", "create", image)
	if err != nil {
		t.Fatalf("podman create: %v %s", err, stderr)
	}
	id := strings.TrimSpace(created)
	defer tool(t, nil, "podman", "rm", "--force", "--volumes", id)
	archive := filepath.Join(t.TempDir(), "rootfs.tar")
	if _, stderr, err := tool(t, nil, "podman", "export", "--output", archive, id); err != nil {
		t.Fatalf("podman export: %v %s", err, stderr)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("podman export: %v", err)
		}
		entries[strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")] = h
	}
	cases := []struct {
		path string
		mode os.FileMode
		uid  int
	}{
		{"usr/local/bin/schedbridge", 0o755, 0},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, 0},
		{"tmp", os.ModeDir | os.ModeSticky | 0o777, 0},
		{"var/lib", os.ModeDir | 0o755, 0},
		{"var/lib/schedbridge", os.ModeDir | 0o755, 65532},
	}
	for _, c := range cases {
		h, ok := entries[c.path]
		if !ok {
			t.Errorf("/%s is not in the image", c.path)
			continue
		}
		fi := h.FileInfo()
		if fi.Mode() != c.mode || h.Uid != c.uid || h.Gid != c.uid {
			t.Errorf("/%s: mode %v owner %d:%d, want %v %d:%d", c.path, fi.Mode(), h.Uid, h.Gid, c.mode, c.uid, c.uid)
		}
		if !fi.IsDir() && h.Size == 0 {
			t.Errorf("/%s is empty", c.path)
		}
	}
	// Nothing else: no shell, no package manager, no stray files of the
	// build context.
	var extra []string
	for name, h := range entries {
		if h.Typeflag != tar.TypeDir && name != "usr/local/bin/schedbridge" && name != "etc/ssl/certs/ca-certificates.crt" {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		t.Errorf("unexpected files in the image: %v", extra)
	}
}

func get(url string) (int, map[string]any) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func doJSON(t *testing.T, req *http.Request, want int) map[string]any {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	return m
}

// forecastBody is a forecast of n quarter-hours for the day.
func forecastBody(day string, n int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprint(1.5 + float64(i)/100)
	}
	return fmt.Sprintf(`{"delivery_day":%q,"series":[{"control_area":"TenneT","kind":"consumption","values":[%s]}]}`,
		day, strings.Join(vals, ","))
}
