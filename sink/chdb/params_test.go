package chdb

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// Every value comes back as it was given, whatever bytes it holds: it is a
// parameter, not SQL, and its escaping round-trips.
func TestQueryParamsHostile(t *testing.T) {
	values := []string{
		"", "plain", "it's", `a\b`, `\`, `\'`, "'; DROP TABLE verdicts; --",
		"tab\there", "new\nline", "cr\rx", "nul\x00byte", "\xff\xfe invalid utf-8",
		"{x:String}", "$$", strings.Repeat("é'\\\x00", 50000),
	}
	for _, v := range values {
		out, err := engine.QueryParams(context.Background(), "SELECT {v:String} AS v, length({v:String}) AS n", map[string]string{"v": v}, "JSONEachRow")
		if err != nil {
			t.Fatalf("%q: %v", short(v), err)
		}
		var row struct {
			V string `json:"v"`
			N int    `json:"n"`
		}
		if err := json.Unmarshal(out, &row); err != nil {
			t.Fatalf("%q: %v: %s", short(v), err, out)
		}
		if row.N != len(v) || (strings.ToValidUTF8(v, "\uFFFD") == v && row.V != v) {
			t.Errorf("%q: came back as %q (length %d, want %d)", short(v), short(row.V), row.N, len(v))
		}
	}
	if out, err := engine.Query([]byte("EXISTS TABLE verdicts"), "CSV"); err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("verdicts after the hostile values: %q %v", out, err)
	}
}

func TestQueryParamsTyped(t *testing.T) {
	out, err := engine.QueryParams(context.Background(), "SELECT {n:UInt64} + 1 AS n, {a:String} || {b:String} AS s", map[string]string{"n": "41", "a": "x", "b": "y"}, "JSONEachRow")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != `{"n":42,"s":"xy"}` {
		t.Fatalf("got %s", got)
	}
	// A value that is not of its type is the engine's error, not SQL.
	if _, err := engine.QueryParams(context.Background(), "SELECT {n:UInt64}", map[string]string{"n": "1 OR 1=1"}, "CSV"); err == nil {
		t.Fatal("a UInt64 parameter took 1 OR 1=1")
	}
	if _, err := engine.QueryParams(context.Background(), "SELECT 1", map[string]string{"bad name": "x"}, "CSV"); err == nil {
		t.Fatal("a parameter name with a space was taken")
	}
	if _, err := engine.QueryParams(context.Background(), "SELECT 1", nil, "CSV"); err != nil {
		t.Fatalf("no parameters: %v", err)
	}
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
