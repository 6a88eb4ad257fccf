// Package objtest gives test suites real S3 servers, MinIO and versitygw,
// started from pinned binaries on loopback, because in-process fakes differ
// from real servers in exactly the places (multipart framing, checksums,
// error codes) where object-store bugs hide. Each server starts once per test
// binary; every call hands out a fresh bucket name, so tests stay isolated
// without restarting servers. Call Main from TestMain so that the servers stop
// when the tests end. Tests of bucket event notifications get a server of
// their own (MinIOWithWebhook, VersityWithWebhook), because notification
// targets are part of a server's start-up configuration.
package objtest

import (
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
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/notification"

	"github.com/schedbridge/schedbridge/storage/objstore"
)

// EnvToolsDir overrides where the pinned server binaries are looked up
// (default: the user cache directory's schedbridge/bin); deploy/dev/test-deps.sh
// honours it too.
const EnvToolsDir = "SCHEDBRIDGE_TOOLS_DIR"

// region is what both servers use by default; setting it spares the client a
// bucket-location request.
const region = "us-east-1"

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 60 * time.Second

// tool is one pinned server binary. The module and version must match the
// ones deploy/dev/test-deps.sh installs.
type tool struct {
	name    string // directory prefix and binary name
	module  string
	version string
	// command builds the server command for a data directory and address.
	command func(bin, dir, addr, access, secret string) (*exec.Cmd, error)
	// ready reports whether the server at addr answers S3 requests.
	ready func(ctx context.Context, addr, access, secret string) error

	once sync.Once
	srv  *server
	err  error
}

type server struct {
	addr, access, secret string
	cmd                  *exec.Cmd
	dir                  string
	done                 chan struct{} // closed when the process has exited
}

var (
	minioTool = &tool{
		name:    "minio",
		module:  "github.com/minio/minio",
		version: "v0.0.0-20260212201848-7aac2a2c5b7c",
		command: minioCommand,
		ready:   minioReady,
	}
	versityTool = &tool{
		name:    "versitygw",
		module:  "github.com/versity/versitygw/cmd/versitygw",
		version: "v1.8.0",
		command: versityCommand,
		ready:   s3Ready,
	}
	tools     = []*tool{minioTool, versityTool}
	bucketSeq atomic.Int64
)

// Runner is what Main runs: a *testing.M, or a RunFunc that runs another
// package's Main, so that suites needing several servers can nest them.
type Runner interface{ Run() int }

// RunFunc adapts a function to Runner.
type RunFunc func() int

// Run calls f.
func (f RunFunc) Run() int { return f() }

// Main runs the tests and stops the servers that they started. Call it from
// TestMain: os.Exit(objtest.Main(m)).
func Main(m Runner) int {
	code := m.Run()
	for _, t := range tools {
		if t.srv != nil {
			t.srv.stop()
		}
	}
	return code
}

// MinIO returns the address and credentials of the test MinIO server and a
// bucket name that no other call returns; objstore.NewS3 creates the bucket.
// The fields also serve other clients such as the aws CLI (see EndpointURL).
func MinIO(tb testing.TB) objstore.S3Config {
	tb.Helper()
	return minioTool.config(tb)
}

// Versity returns the address and credentials of the test versitygw server
// (posix backend) and a fresh bucket name, like MinIO.
func Versity(tb testing.TB) objstore.S3Config {
	tb.Helper()
	return versityTool.config(tb)
}

// MinIOWebhookARN is the ARN under which MinIOWithWebhook's server knows its
// webhook target; a bucket notification configuration names it.
const MinIOWebhookARN = "arn:minio:sqs::" + minioWebhookID + ":webhook"

// minioWebhookID names the webhook target in MinIO's environment variables
// (MINIO_NOTIFY_WEBHOOK_*_<ID>); MinIO uses it verbatim in the ARN.
const minioWebhookID = "SCHEDBRIDGE"

// MinIOWithWebhook starts a MinIO server of its own for this test, with a
// webhook notification target that posts to endpointURL, and stops it when
// the test ends. The token, when not empty, is sent as "Authorization: Bearer
// <token>". The target does nothing until a bucket's notification
// configuration names MinIOWebhookARN. The server is not shared because its
// notification targets are fixed at start-up, and other tests' uploads must
// not post to this test's endpoint.
//
// MinIO starts even when nothing listens at endpointURL yet: it connects to
// the target when it has an event to send, and drops the event (no queue
// directory is configured) when the connection fails.
func MinIOWithWebhook(tb testing.TB, endpointURL, token string) objstore.S3Config {
	tb.Helper()
	env := []string{
		"MINIO_NOTIFY_WEBHOOK_ENABLE_" + minioWebhookID + "=on",
		"MINIO_NOTIFY_WEBHOOK_ENDPOINT_" + minioWebhookID + "=" + endpointURL,
		// MinIO registers its notification targets in the background after
		// it reports ready, and until then refuses a bucket notification
		// that names one (ErrARNNotification). A synchronous boot holds its
		// S3 API until the targets are registered.
		"MINIO_SYNC_BOOT=on",
	}
	if token != "" {
		env = append(env, "MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_"+minioWebhookID+"="+token)
	}
	return minioTool.dedicated(tb, env)
}

// MinIONotify creates the config's bucket on a MinIOWithWebhook server and
// has it send the creation events (s3:ObjectCreated:*, which covers plain and
// multipart uploads and copies) of keys under prefix to the webhook target,
// as `mc event add ALIAS/BUCKET ARN --event put --prefix PREFIX` would.
func MinIONotify(tb testing.TB, c objstore.S3Config, prefix string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := minio.New(c.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""), Region: region})
	if err != nil {
		tb.Fatal(err)
	}
	if err := client.MakeBucket(ctx, c.Bucket, minio.MakeBucketOptions{Region: region}); err != nil &&
		minio.ToErrorResponse(err).Code != minio.BucketAlreadyOwnedByYou {
		tb.Fatalf("create bucket %s: %v", c.Bucket, err)
	}
	arn, err := notification.NewArnFromString(MinIOWebhookARN)
	if err != nil {
		tb.Fatal(err)
	}
	queue := notification.NewConfig(arn)
	queue.AddEvents(notification.ObjectCreatedAll)
	queue.AddFilterPrefix(prefix)
	var conf notification.Configuration
	conf.AddQueue(queue)
	if err := client.SetBucketNotification(ctx, c.Bucket, conf); err != nil {
		tb.Fatalf("bucket notification for %s: %v", c.Bucket, err)
	}
}

// VersityWithWebhook starts a versitygw server of its own for this test that
// posts the S3 event notifications of every bucket to endpointURL, and stops
// it when the test ends. events, when not empty, lists the event types that
// are sent (versitygw's --event-filter, for instance "s3:ObjectCreated:*");
// versitygw has no prefix filter and no per-bucket configuration.
//
// versitygw posts a test event to endpointURL while it starts and refuses to
// start when the connection is refused, so something must listen there
// before this is called. Its requests carry no Authorization header.
func VersityWithWebhook(tb testing.TB, endpointURL string, events ...string) objstore.S3Config {
	tb.Helper()
	env := []string{"VGW_EVENT_WEBHOOK_URL=" + endpointURL}
	if len(events) > 0 {
		filter := map[string]bool{}
		for _, e := range events {
			filter[e] = true
		}
		b, err := json.Marshal(filter)
		if err != nil {
			tb.Fatal(err)
		}
		path := filepath.Join(tb.TempDir(), "event-filter.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			tb.Fatal(err)
		}
		env = append(env, "VGW_EVENT_FILTER="+path)
	}
	return versityTool.dedicated(tb, env)
}

// EndpointURL returns the config's endpoint as a URL, the form that the aws
// CLI's --endpoint-url and most SDKs want.
func EndpointURL(c objstore.S3Config) string {
	if c.UseSSL {
		return "https://" + c.Endpoint
	}
	return "http://" + c.Endpoint
}

func (t *tool) config(tb testing.TB) objstore.S3Config {
	tb.Helper()
	t.once.Do(func() { t.srv, t.err = t.start(nil) })
	if t.err != nil {
		tb.Fatalf("%s for tests: %v", t.name, t.err)
	}
	return t.srv.config()
}

// dedicated starts a server for one test, with env added to its
// environment, and stops it when the test ends.
func (t *tool) dedicated(tb testing.TB, env []string) objstore.S3Config {
	tb.Helper()
	srv, err := t.start(env)
	if err != nil {
		tb.Fatalf("%s for %s: %v", t.name, tb.Name(), err)
	}
	tb.Cleanup(func() {
		// The server's log is the only place where it says why a
		// notification was not delivered.
		if tb.Failed() {
			tb.Logf("%s log ends:\n%s", t.name, logTail(filepath.Join(srv.dir, "server.log")))
		}
		srv.stop()
	})
	return srv.config()
}

// config returns the server's address and credentials with a fresh bucket name.
func (s *server) config() objstore.S3Config {
	return objstore.S3Config{
		Endpoint:  s.addr,
		Bucket:    fmt.Sprintf("t%d-%s", bucketSeq.Add(1), randomHex(4)),
		AccessKey: s.access,
		SecretKey: s.secret,
		Region:    region,
	}
}

// binary returns where deploy/dev/test-deps.sh puts the pinned binary:
// <tools dir>/<name>-<version>/<name>.
func (t *tool) binary() (string, error) {
	dir := os.Getenv(EnvToolsDir)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "schedbridge", "bin")
	}
	return filepath.Join(dir, t.name+"-"+t.version, t.name), nil
}

// start starts a server of the tool with env added to its environment.
func (t *tool) start(env []string) (*server, error) {
	bin, err := t.binary()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s not found: run `make test-deps` (it installs %s@%s into %s)", bin, t.module, t.version, filepath.Dir(bin))
	}
	// A free port can be taken by someone else before the server binds it;
	// try a few times.
	for attempt := 1; ; attempt++ {
		srv, err := t.startOnce(bin, env)
		if err == nil || attempt == 3 {
			return srv, err
		}
	}
}

func (t *tool) startOnce(bin string, env []string) (*server, error) {
	dir, err := os.MkdirTemp("", "schedbridge-"+t.name+"-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	srv := &server{
		addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		access: "ak" + randomHex(9),
		secret: "sk" + randomHex(19),
		dir:    dir,
		done:   make(chan struct{}),
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logFile.Close() // the child keeps its own descriptor
	cmd, err := t.command(bin, data, srv.addr, srv.access, srv.secret)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if len(env) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	srv.cmd = cmd
	go func() { _ = cmd.Wait(); close(srv.done) }()

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var lastErr error
	for {
		if lastErr = t.ready(ctx, srv.addr, srv.access, srv.secret); lastErr == nil {
			return srv, nil
		}
		select {
		case <-srv.done:
			tail := logTail(logPath)
			srv.stop()
			return nil, fmt.Errorf("%s exited during start-up (%v); its log ends:\n%s", t.name, cmd.ProcessState, tail)
		case <-ctx.Done():
			tail := logTail(logPath)
			srv.stop()
			return nil, fmt.Errorf("%s not ready after %s (last check: %v); log ends:\n%s", t.name, startTimeout, lastErr, tail)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func minioCommand(bin, dir, addr, access, secret string) (*exec.Cmd, error) {
	consolePort, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "server", dir,
		"--address", addr,
		"--console-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(consolePort)))
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+access,
		"MINIO_ROOT_PASSWORD="+secret,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		// Test data dirs live on the root file system, which MinIO otherwise
		// may refuse to use.
		"MINIO_CI_CD=on",
	)
	return cmd, nil
}

func minioReady(ctx context.Context, addr, _, _ string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/minio/health/ready", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check: %s", resp.Status)
	}
	return nil
}

func versityCommand(bin, dir, addr, access, secret string) (*exec.Cmd, error) {
	cmd := exec.Command(bin, "--port", addr, "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+access, "ROOT_SECRET_KEY="+secret)
	return cmd, nil
}

// s3Ready checks that the port accepts connections and that an authenticated
// ListBuckets succeeds, which is the first thing every test does implicitly.
func s3Ready(ctx context.Context, addr, access, secret string) error {
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	conn.Close()
	client, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Region: region})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = client.ListBuckets(cctx)
	return err
}

// stop ends the server's process group (children included) and removes its
// data directory.
func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		signalGroup(s.cmd, false)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			signalGroup(s.cmd, true)
			<-s.done
		}
	}
	os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// logTail returns the last few KiB of a server log for error messages.
func logTail(path string) string {
	const max = 4 << 10
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	if len(b) == 0 {
		return "(empty)"
	}
	return string(b)
}
