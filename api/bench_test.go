package api_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// meteredBody builds a metered-data body of n market locations x 96 values
// for 2026-11-20; variant changes every value so that consecutive bodies
// replace each other instead of answering unchanged.
func meteredBody(n, variant int) []byte {
	var b bytes.Buffer
	b.Grow(n * 900)
	b.WriteString(`{"entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"malo":"%011d","day":"2026-11-20","unit":"KWH","values":[`, 10000000000+i)
		for q := range 96 {
			if q > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(float64((i+q+variant)%977)/8, 'f', -1, 64))
		}
		b.WriteString("]}")
	}
	b.WriteString("]}")
	return b.Bytes()
}

// BenchmarkMeteredData10k submits 10,000 entries x 96 values end to end:
// HTTP handler, authentication, decoding, validation, hashing and the staging
// transaction with its audit entry, on each backend. Every iteration replaces
// all 10,000 current versions.
func BenchmarkMeteredData10k(b *testing.B) {
	bodies := [][]byte{meteredBody(10000, 0), meteredBody(10000, 1)}
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d, api.Config{})
			b.SetBytes(int64(len(bodies[0])))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("POST", "/v1/metered-data", bytes.NewReader(bodies[i%2]))
				req.Header.Set("X-API-Key", f.keys["data1"])
				rec := httptest.NewRecorder()
				f.srv.Handler().ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %.300s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkForecastSmall is one small forecast submission (96 values) per
// iteration, each a new version, through the handler on each backend.
func BenchmarkForecastSmall(b *testing.B) {
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d, api.Config{})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("POST", "/v1/forecasts", bytes.NewReader(forecast("2026-11-23", 96, float64(i), "")))
				req.Header.Set("X-API-Key", f.keys["data1"])
				rec := httptest.NewRecorder()
				f.srv.Handler().ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
