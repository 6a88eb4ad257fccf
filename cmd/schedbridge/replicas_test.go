package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// The timing of the replicas test: a follower tries to become leader every
// second, runs beat every second and are stale after three, and the cheap
// cron stage fires on every slot of two seconds.
const (
	replicaLeaderPoll = time.Second
	replicaHeartbeat  = time.Second
	replicaStaleAfter = 3 * time.Second
	replicaSlot       = 2 * time.Second
)

// TestTwoReplicas runs two serve processes on one PostgreSQL database and
// one MinIO bucket, as docs/operations.md describes them:
//   - 50 inbox files uploaded by another S3 client (the aws CLI) are each
//     staged exactly once, whichever replica claims them;
//   - exactly one replica is the scheduler's leader, and shows it in
//     schedbridge_scheduler_leader; after kill -9 of the leader the other
//     takes over within the documented bound, and the cron stage runs once
//     per slot, before and after the takeover, the slot that fell due
//     during it included;
//   - a stage running on the command line while the new leader takes over
//     is left running (its heartbeat is fresh) and succeeds, while the run
//     of a command-line process that was killed is failed as stale.
func TestTwoReplicas(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("aws"); err != nil {
		t.Fatal("the aws CLI is missing: run make test-deps")
	}
	ctx := context.Background()
	a := newInstance(t, sqldb.Postgres)
	a.withInbox(true)
	a.env = append(a.env, "SCHEDBRIDGE_STAGE_ATTEMPTS=1", "SCHEDBRIDGE_MAKO_SYNC=false",
		"SCHEDBRIDGE_LEADER_POLL="+replicaLeaderPoll.String(), "SCHEDBRIDGE_RUN_HEARTBEAT="+replicaHeartbeat.String(),
		"SCHEDBRIDGE_RUN_STALE_AFTER="+replicaStaleAfter.String())
	processKey := a.setup()
	dataKey, _ := a.cli(0, "key", "create", "--scope", "data", "--portfolio", "p1")
	dataKey = strings.TrimSpace(dataKey)
	// The forecast stage fires on every two-second slot; it is cheap here
	// (p1 has metered data but no market locations). The other stages are off.
	config := filepath.Join(t.TempDir(), "replicas.yaml")
	if err := os.WriteFile(config, []byte("pipeline:\n  schedule:\n    forecast: \"*/2 * * * * *\"\n"+
		"    aggregate: \"-\"\n    open-position: \"-\"\n    schedules: \"-\"\n    kalkulation: \"-\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := a.second()
	db, err := sqldb.Open(ctx, sqldb.Options{URL: a.dbURL})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	replicas := []*instance{a, b}
	procs := make([]*exec.Cmd, 2)
	logs := make([]*syncBuffer, 2)
	var wg sync.WaitGroup
	for i, in := range replicas {
		wg.Go(func() { procs[i], logs[i] = in.serveWith("--config", config, "serve") })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	leading := func(in *instance) float64 {
		v, ok := sample(t, in.scrape(), "schedbridge_scheduler_leader")
		if !ok {
			t.Fatalf("replica %s shows no schedbridge_scheduler_leader", in.addr)
		}
		return v
	}
	leader := -1
	waitFor(t, "one replica to lead", 10*time.Second, func() bool {
		l0, l1 := leading(a), leading(b)
		if l0+l1 > 1 {
			t.Fatalf("both replicas lead")
		}
		switch {
		case l0 == 1:
			leader = 0
		case l1 == 1:
			leader = 1
		}
		return leader >= 0
	})
	follower := 1 - leader
	t.Logf("replica %d leads", leader)

	// 50 files, dropped by another S3 client, while both replicas scan.
	const files, rows = 50, 20
	dir := t.TempDir()
	var wantSum float64
	for i := range files {
		writeCSV(t, filepath.Join(dir, fmt.Sprintf("f%02d.csv", i)), rows, 100+i)
		for r := range rows {
			for q := range 96 {
				wantSum += float64((r+q)%97) + float64(q)/1000
			}
		}
	}
	s3 := objtest.MinIO(t)
	s3.Bucket = envValue(a.env, "SCHEDBRIDGE_S3_BUCKET")
	aws := exec.Command("aws", "--endpoint-url", objtest.EndpointURL(s3), "s3", "cp", "--recursive", "--quiet", dir,
		"s3://"+s3.Bucket+"/inbox/p1/metered-data/")
	aws.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3.SecretKey,
		"AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	if out, err := aws.CombinedOutput(); err != nil {
		t.Fatalf("aws s3 cp: %v\n%s", err, out)
	}

	// A stage on the command line, held at its first write to the lake by
	// a proxy in front of MinIO, so that it is at work while the leader
	// changes; and one whose process is killed while it is at work.
	gate := newS3Gate(t, envValue(a.env, "SCHEDBRIDGE_S3_ENDPOINT"))
	live := a.startCLI(gate, "run", "forecast", "--day", "2026-12-01")
	killed := a.startCLI(gate, "run", "forecast", "--day", "2026-12-02")
	liveRun := cliRun(t, db, "2026-12-01")
	killedRun := cliRun(t, db, "2026-12-02")
	waitFor(t, "both command-line runs to hold at the lake", 30*time.Second, func() bool { return gate.held.Load() >= 2 })
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.cmd.Wait()

	waitFor(t, "the inbox to process every file", 90*time.Second, func() bool {
		r := a.report(processKey)
		return len(r["processed"]) == files && len(r["processing"]) == 0 && len(r["pending"]) == 0
	})

	// kill -9 of the leader: its database session ends with it, and with
	// the session its advisory lock; the follower takes it at its next try.
	killedAt := time.Now()
	if err := procs[leader].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	procs[leader].Wait()
	var tookOver time.Duration
	bound := replicaLeaderPoll + 2*time.Second // the poll, plus room for a loaded test machine
	waitFor(t, "the follower to take over", 10*time.Second, func() bool {
		tookOver = time.Since(killedAt)
		return leading(replicas[follower]) == 1
	})
	t.Logf("takeover %.2f s after kill -9 (leader_poll %s)", tookOver.Seconds(), replicaLeaderPoll)
	if tookOver > bound {
		t.Errorf("takeover took %s, more than leader_poll %s and the slack (%s)", tookOver, replicaLeaderPoll, bound)
	}
	// The gauge goes to 1 as the leadership begins; the log line follows
	// once the leader has looked for stale runs and missed slots.
	waitFor(t, "the new leader to log that it leads", 5*time.Second, func() bool {
		return strings.Contains(logs[follower].String(), `"msg":"scheduler is leader"`)
	})

	// The killed command-line process's run is failed as stale by the new
	// leader; the live one, checked by it every second meanwhile, is not.
	waitFor(t, "the killed process's run to be failed", replicaStaleAfter+5*time.Second, func() bool {
		return runOf(t, db, killedRun).Status == pipeline.RunFailed
	})
	if r := runOf(t, db, killedRun); !strings.Contains(r.Error, "no heartbeat for more than "+replicaStaleAfter.String()) {
		t.Errorf("killed process's run = %+v", r)
	}
	time.Sleep(replicaStaleAfter + 2*replicaHeartbeat) // several checks of the new leader
	if r := runOf(t, db, liveRun); r.Status != pipeline.RunRunning || r.HeartbeatAt == nil ||
		time.Since(*r.HeartbeatAt) > replicaStaleAfter {
		t.Fatalf("the command-line run was not left running with a fresh heartbeat: %+v", r)
	}
	waitFor(t, "the new leader to fire the cron stage", 10*time.Second, func() bool {
		for _, r := range cronRuns(t, db) {
			if r.StartedAt.After(killedAt.Add(tookOver)) && r.Status == pipeline.RunSucceeded {
				return true
			}
		}
		return false
	})
	close(gate.open)
	if err := live.cmd.Wait(); err != nil {
		t.Fatalf("the command-line run: %v\n%s", err, live.stderr.String())
	}
	if r := runOf(t, db, liveRun); r.Status != pipeline.RunSucceeded {
		t.Errorf("the command-line run = %+v, want succeeded", r)
	}

	// Each inbox file once: one receipt, one staging request under its
	// input hash, and the staged values add up to the files' values.
	seen := map[string]bool{}
	owners := map[string]int{}
	for _, f := range replicas[follower].report(processKey)["processed"] {
		key, _ := f["key"].(string)
		receipt, _ := f["receipt"].(map[string]any)
		if seen[key] {
			t.Errorf("file %s has two receipts", key)
		}
		seen[key] = true
		owners[fmt.Sprint(f["owner"])]++
		counts, _ := receipt["counts"].(map[string]any)
		if receipt["status"] != "created" || counts["values"] != float64(rows*96) {
			t.Errorf("file %s: receipt %v", key, receipt)
		}
		hash, _ := receipt["input_hash"].(string)
		code, _, sub := replicas[follower].do("GET", "/v1/submissions/"+hash, dataKey, nil)
		if reqs, _ := sub["requests"].([]any); code != 200 || len(reqs) != 1 {
			t.Errorf("file %s: submission %s was staged %d times (%d %v)", key, hash, len(reqs), code, sub)
		}
	}
	if len(seen) != files {
		t.Errorf("%d files have receipts, want %d", len(seen), files)
	}
	t.Logf("inbox files processed per replica: %v", owners)
	if n := a.versions(); n != files*rows {
		t.Errorf("metered versions = %d, want %d", n, files*rows)
	}
	var days []pipeline.Day
	for d := 10; d < 20; d++ {
		days = append(days, pipeline.NewDay(2026, time.November, d))
	}
	var gotSum float64
	if err := db.MeteredHistory(ctx, "p1", days, func(e pipeline.MeteredEntry) error {
		for _, v := range e.Values {
			gotSum += v
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := gotSum - wantSum; d > 1e-6*wantSum || d < -1e-6*wantSum {
		t.Errorf("staged values add up to %.3f, the files' to %.3f", gotSum, wantSum)
	}

	// The cron stage: one run per slot, by the old leader before the kill
	// and by the new one after the takeover. A slot that fell due during
	// the takeover is fired late by the new leader, so the slots run on
	// without a gap when the takeover took less than a slot.
	runs := cronRuns(t, db)
	slots := map[time.Time][]int64{}
	var before, after []time.Time
	for _, r := range runs {
		if r.CronSlot == nil || !r.CronSlot.Equal(r.CronSlot.Truncate(replicaSlot)) || r.StartedAt.Before(*r.CronSlot) {
			t.Errorf("cron run %d started %s for slot %v", r.ID, r.StartedAt, r.CronSlot)
			continue
		}
		slot := *r.CronSlot
		slots[slot] = append(slots[slot], r.ID)
		if r.StartedAt.Before(killedAt) {
			before = append(before, slot)
		} else {
			after = append(after, slot)
		}
	}
	for slot, ids := range slots {
		if len(ids) > 1 {
			t.Errorf("slot %s ran %d times: runs %v", slot.Format(time.RFC3339), len(ids), ids)
		}
	}
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("cron runs: %d before the kill, %d after; want both", len(before), len(after))
	}
	last, first := slices.MaxFunc(before, time.Time.Compare), slices.MinFunc(after, time.Time.Compare)
	if gap := first.Sub(last); tookOver < replicaSlot && gap != replicaSlot {
		t.Errorf("the old leader's last slot %s and the new leader's first %s are %s apart, want one slot (%s)",
			last.Format(time.RFC3339), first.Format(time.RFC3339), gap, replicaSlot)
	}
	t.Logf("cron: %d runs, %d by the old leader up to slot %s, %d by the new one from slot %s",
		len(runs), len(before), last.Format(time.TimeOnly), len(after), first.Format(time.TimeOnly))
}

// cliProc is a command running in the background.
type cliProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
}

// startCLI starts a command whose object store is reached through gate.
func (in *instance) startCLI(gate *s3Gate, args ...string) cliProc {
	in.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append([]string{}, in.env...), "SCHEDBRIDGE_S3_ENDPOINT="+gate.addr)
	p := cliProc{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		in.t.Fatal(err)
	}
	in.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

// s3Gate is a proxy in front of the S3 server that holds every object
// write under lake/ until open is closed, so that a stage stays at work
// for as long as a test needs. held counts the writes it holds.
type s3Gate struct {
	addr string
	open chan struct{}
	held atomic.Int32
}

func newS3Gate(t *testing.T, endpoint string) *s3Gate {
	target, err := url.Parse("http://" + endpoint)
	if err != nil {
		t.Fatal(err)
	}
	// The signed Host header is the proxy's, which the proxy passes on
	// unchanged, so the server accepts the signature.
	proxy := httputil.NewSingleHostReverseProxy(target)
	// A held write whose process was killed ends here; that is expected.
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	g := &s3Gate{open: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/lake/") {
			g.held.Add(1)
			select {
			case <-g.open:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		select {
		case <-g.open:
		default:
			close(g.open)
		}
		srv.Close()
	})
	g.addr = strings.TrimPrefix(srv.URL, "http://")
	return g
}

// cliRun waits for the command line's run of the forecast for day to be
// recorded and returns its id.
func cliRun(t *testing.T, db *sqldb.DB, day string) int64 {
	t.Helper()
	d, err := pipeline.ParseDay(day)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	waitFor(t, "the command-line run of "+day+" to be recorded", 30*time.Second, func() bool {
		runs, err := db.Runs(context.Background(), pipeline.RunQuery{Day: &d, Trigger: "cli", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > 1 {
			t.Fatalf("%d command-line runs of %s", len(runs), day)
		}
		if len(runs) == 1 {
			id = runs[0].ID
		}
		return id != 0
	})
	return id
}

func runOf(t *testing.T, db *sqldb.DB, id int64) pipeline.Run {
	t.Helper()
	r, err := db.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// cronRuns lists the runs the scheduler fired, oldest first.
func cronRuns(t *testing.T, db *sqldb.DB) []pipeline.Run {
	t.Helper()
	runs, err := db.Runs(context.Background(), pipeline.RunQuery{Trigger: "cron", Stage: pipeline.StageForecast, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs
}

// TestConfigReplicas: the leader poll and the run heartbeat come from the
// environment, and a staleness threshold that live runs could not keep up
// with is refused at the door.
func TestConfigReplicas(t *testing.T) {
	for _, c := range []struct {
		env                    map[string]string
		poll, beat, staleAfter time.Duration
		err                    string // "" = accepted
	}{
		{env: nil, poll: 15 * time.Second, beat: 10 * time.Second, staleAfter: 30 * time.Second},
		{env: map[string]string{"SCHEDBRIDGE_LEADER_POLL": "1s", "SCHEDBRIDGE_RUN_HEARTBEAT": "1s", "SCHEDBRIDGE_RUN_STALE_AFTER": "2s"},
			poll: time.Second, beat: time.Second, staleAfter: 2 * time.Second},
		{env: map[string]string{"SCHEDBRIDGE_RUN_STALE_AFTER": "19s"}, err: "run_stale_after (SCHEDBRIDGE_RUN_STALE_AFTER) 19s: want at least twice pipeline.run_heartbeat"},
		{env: map[string]string{"SCHEDBRIDGE_RUN_HEARTBEAT": "0s"}, err: "run_heartbeat (SCHEDBRIDGE_RUN_HEARTBEAT) 0s: must be positive"},
		{env: map[string]string{"SCHEDBRIDGE_LEADER_POLL": "-1s"}, err: "leader_poll (SCHEDBRIDGE_LEADER_POLL) -1s: must be positive"},
		{env: map[string]string{"SCHEDBRIDGE_RUN_HEARTBEAT": "often"}, err: "SCHEDBRIDGE_RUN_HEARTBEAT"},
	} {
		cfg, err := loadConfig("", func(k string) string { return c.env[k] })
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: %v, want an error saying %q", c.env, err, c.err)
			}
		case err != nil:
			t.Errorf("%v: %v", c.env, err)
		case cfg.Pipeline.LeaderPoll != c.poll || cfg.Pipeline.RunHeartbeat != c.beat || cfg.Pipeline.RunStaleAfter != c.staleAfter:
			t.Errorf("%v: poll %s, heartbeat %s, stale after %s", c.env, cfg.Pipeline.LeaderPoll, cfg.Pipeline.RunHeartbeat, cfg.Pipeline.RunStaleAfter)
		}
	}
}
