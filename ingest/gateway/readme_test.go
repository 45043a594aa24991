package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ponens/ponens/ingest/gateway"
)

// readmeCurl matches the README's example requests to the gateway: a
// Content-Type, a body given inline (-d '…') or from a file
// (--data-binary @FILE), and the gateway's URL.
var readmeCurl = regexp.MustCompile(`^\$ curl -s -XPOST -H 'Content-Type: ([^']+)' (?:-d '([^']*)'|--data-binary @(\S+)) http://127\.0\.0\.1:8080(/\S+)$`)

// TestReadmeCurl sends each request the README shows to a real gateway,
// in the README's order, and compares the answer with the line the README
// shows after it, byte for byte: the README cannot drift from the gateway.
func TestReadmeCurl(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, gateway.Options{})
	lines := strings.Split(string(data), "\n")
	n := 0
	for i, l := range lines {
		m := readmeCurl.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		n++
		body := []byte(m[2])
		if m[3] != "" {
			if body, err = os.ReadFile(filepath.Join(root, m[3])); err != nil {
				t.Fatalf("README.md:%d: %v", i+1, err)
			}
		}
		req, err := http.NewRequest(http.MethodPost, f.url+m[4], bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", m[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := ""
		if i+1 < len(lines) {
			want = strings.TrimSpace(lines[i+1])
		}
		if strings.TrimSpace(string(got)) != want {
			t.Errorf("README.md:%d: %s\nanswered %s\nthe README shows %s", i+1, strings.TrimSpace(l), got, want)
		}
	}
	if n == 0 {
		t.Fatal("no curl example found in README.md")
	}
}
