package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ponens/ponens/query/alert"
)

// openAPIDoc is what the test reads of the document.
type openAPIDoc struct {
	OpenAPI    string                          `json:"openapi"`
	Paths      map[string]map[string]openAPIOp `json:"paths"`
	Components struct {
		Parameters map[string]openAPIParam `json:"parameters"`
	} `json:"components"`
}

type openAPIOp struct {
	Parameters []openAPIParam `json:"parameters"`
	Responses  map[string]any `json:"responses"`
}

type openAPIParam struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

// /openapi.json is the embedded document (openapi.json, the golden file),
// OpenAPI 3.1, describing exactly the routes registered on the mux, each
// with exactly the query and path parameters the route takes, and every
// $ref in it resolves.
//
// A server without live verdicts registers no /v1/stream, and one
// without the alerts bucket no admin routes; its document does not
// describe them.
func TestOpenAPI(t *testing.T) {
	t.Run("live", func(t *testing.T) {
		checkOpenAPI(t, Options{Store: chdbQ(), Live: NATSLive{}, Alerts: alert.Store{}}, true)
	})
	t.Run("store only", func(t *testing.T) { checkOpenAPI(t, Options{Store: chdbQ()}, false) })
}

func checkOpenAPI(t *testing.T, opts Options, live bool) {
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	code, body := get(t, ts.URL+"/openapi.json")
	if code != 200 || live && !bytes.Equal(body, OpenAPI()) {
		t.Fatalf("GET /openapi.json: %d, %d bytes, not the embedded document", code, len(body))
	}
	var doc openAPIDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi.json: openapi %q, want 3.1.0", doc.OpenAPI)
	}
	described := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			described[strings.ToUpper(method)+" "+path] = true
		}
	}
	pathParam := regexp.MustCompile(`\{([a-z]+)\}`)
	for _, r := range s.registered {
		method, path, _ := strings.Cut(r.pattern, " ")
		op, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok {
			t.Errorf("openapi.json: route %s is registered but not described", r.pattern)
			continue
		}
		delete(described, r.pattern)
		var query, inPath []string
		for _, p := range op.Parameters {
			if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				c, found := doc.Components.Parameters[name]
				if !found {
					t.Errorf("openapi.json: %s: parameter %s does not resolve", r.pattern, p.Ref)
				}
				p = c
			}
			if p.In == "path" {
				inPath = append(inPath, p.Name)
			} else {
				query = append(query, p.Name)
			}
		}
		var wantPath []string
		for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
			wantPath = append(wantPath, m[1])
		}
		slices.Sort(query)
		want := slices.Sorted(slices.Values(r.params))
		if !slices.Equal(query, want) || !slices.Equal(inPath, wantPath) {
			t.Errorf("openapi.json: %s: query parameters %v and path parameters %v, the route takes %v and %v", r.pattern, query, inPath, want, wantPath)
		}
		if op.Responses["200"] == nil {
			t.Errorf("openapi.json: %s: no 200 response", r.pattern)
		}
	}
	for pattern := range described {
		t.Errorf("openapi.json: %s is described but no route is registered", pattern)
	}
	refs := regexp.MustCompile(`"\$ref": "#/([^"]+)"`).FindAllSubmatch(body, -1)
	var tree map[string]any
	_ = json.Unmarshal(body, &tree)
	for _, m := range refs {
		var at any = tree
		for _, k := range strings.Split(string(m[1]), "/") {
			obj, _ := at.(map[string]any)
			at = obj[k]
		}
		if at == nil {
			t.Errorf("openapi.json: $ref #/%s does not resolve", m[1])
		}
	}
}
