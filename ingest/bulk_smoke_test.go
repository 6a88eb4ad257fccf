package ingest

import (
	"math/rand/v2"
	"testing"
)

func TestBulkSmoke(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	es := randomMetered(rng, 20)
	body := meteredJSON(es, "")
	sub, err := DecodeMeteredData(body, Rules{})
	if err != nil { t.Fatal(err) }
	for name, data := range map[string][]byte{
		"a.json": body, "a.json.gz": gzipped(body),
		"a.csv": meteredCSV(es, csvStyle{sep: ';', decimalComma: true, bom: true, crlf: true}),
		"b.csv": meteredCSV(es, csvStyle{sep: ',', padded: true}),
		"a.parquet": meteredParquet(t, es, parquetStyle{}),
	} {
		res, err := decode(BulkMetered, name, data, BulkOptions{}, nil)
		t.Logf("%s: %v %+v", name, err, res.Problems)
		if res.InputHash != sub.InputHash { t.Errorf("%s: hash %s want %s", name, res.InputHash, sub.InputHash) }
	}
}
