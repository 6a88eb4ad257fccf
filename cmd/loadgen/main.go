// Command loadgen drives a running schedbridge with small forecast
// submissions from a separate process and reports throughput and latency. It
// only talks to the address it is given; point it at a server on loopback.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "base URL of the server")
	conc := flag.Int("c", 16, "concurrent clients")
	dur := flag.Duration("d", 10*time.Second, "duration of the run")
	maxReq := flag.Int("n", 1_000_000, "stop after this many requests")
	days := flag.Int("days", 365, "distinct delivery days to spread submissions over")
	asJSON := flag.Bool("json", false, "print the result as JSON")
	summary := flag.String("summary", "", "print the summary of a result saved with -json instead of running")
	peer := flag.String("peer", "", "with -summary: a second saved result to compare with, printed as ratios")
	flag.Parse()
	if *summary != "" {
		os.Exit(printSaved(*summary, *peer))
	}
	key := os.Getenv("SCHEDBRIDGE_LOADGEN_KEY")
	if key == "" {
		fmt.Fprintln(os.Stderr, "loadgen: set SCHEDBRIDGE_LOADGEN_KEY to a data key (kept out of argv and logs)")
		os.Exit(2)
	}
	res := run(*url, key, *conc, *dur, *maxReq, *days)
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	printResult(res)
}

func printResult(res Result) {
	fmt.Printf("requests %d in %.2fs: %.0f/s; status %v; latency p50 %.2fms p90 %.2fms p99 %.2fms max %.2fms\n",
		res.Requests, res.Seconds, res.PerSecond, res.Status, res.P50ms, res.P90ms, res.P99ms, res.MaxMs)
}

// printSaved prints a result saved with -json and, given a peer's result
// from the same invocation of deploy/dev/loadtest.sh, the ratios to it, so
// that the figures of a noisy machine are read against each other.
func printSaved(path, peerPath string) int {
	res, err := readResult(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 1
	}
	if peerPath == "" {
		printResult(res)
		return 0
	}
	peer, err := readResult(peerPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 1
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	fmt.Printf("ratio %s / %s: throughput %.2fx (%.0f/s vs %.0f/s), p50 %.2fx (%.2fms vs %.2fms), p99 %.2fx (%.2fms vs %.2fms)\n",
		name(path), name(peerPath), ratio(res.PerSecond, peer.PerSecond), res.PerSecond, peer.PerSecond,
		ratio(res.P50ms, peer.P50ms), res.P50ms, peer.P50ms, ratio(res.P99ms, peer.P99ms), res.P99ms, peer.P99ms)
	return 0
}

func readResult(path string) (Result, error) {
	var res Result
	b, err := os.ReadFile(path)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// name is what the summary calls a saved result: its file name without the
// extension (loadtest.sh saves SQLite.json and PostgreSQL.json).
func name(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// Result is the summary of a run.
type Result struct {
	Requests  int            `json:"requests"`
	Seconds   float64        `json:"seconds"`
	PerSecond float64        `json:"per_second"`
	Status    map[string]int `json:"status"`
	P50ms     float64        `json:"p50_ms"`
	P90ms     float64        `json:"p90_ms"`
	P99ms     float64        `json:"p99_ms"`
	MaxMs     float64        `json:"max_ms"`
}

// body builds the i-th submission: a new delivery day or new values each time,
// so that the server really writes a version instead of answering unchanged.
func body(i, days int) []byte {
	day := pipeline.NewDay(2027, time.January, 1).AddDays(i % days)
	vals := make([]float64, day.Intervals())
	for q := range vals {
		vals[q] = float64((i*7+q)%500) / 10
	}
	b, _ := json.Marshal(map[string]any{
		"delivery_day": day.String(),
		"series":       []map[string]any{{"control_area": "TenneT", "kind": "consumption", "unit": "MW", "values": vals}},
	})
	return b
}

func run(url, key string, conc int, dur time.Duration, maxReq, days int) Result {
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}, Timeout: 30 * time.Second}
	var next atomic.Int64
	var mu sync.Mutex
	status := map[string]int{}
	var lat []time.Duration
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := map[string]int{}
			var ll []time.Duration
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= maxReq {
					break
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/forecasts", bytes.NewReader(body(i, days)))
				req.Header.Set("X-API-Key", key)
				req.Header.Set("Content-Type", "application/json")
				t := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						local["error"]++
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ll = append(ll, time.Since(t))
				local[fmt.Sprint(resp.StatusCode)]++
			}
			mu.Lock()
			for k, v := range local {
				status[k] += v
			}
			lat = append(lat, ll...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	return Result{Requests: len(lat), Seconds: secs, PerSecond: float64(len(lat)) / secs, Status: status,
		P50ms: pct(.5), P90ms: pct(.9), P99ms: pct(.99), MaxMs: pct(1)}
}
