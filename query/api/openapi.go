package api

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"strings"
)

// openAPI is the OpenAPI 3.1 description of every route of the service;
// TestOpenAPI checks it against the routes registered.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the service's OpenAPI 3.1 document (JSON).
func OpenAPI() []byte { return openAPI }

// document is the OpenAPI document of this server: the embedded one,
// without the operations of the routes this server does not register
// (/v1/stream without live verdicts, the admin routes without the alerts
// bucket): the dashboard reads the document to know which it may use.
func (s *Server) document() []byte {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		panic("api: the embedded openapi.json does not decode: " + err.Error()) // TestOpenAPI reads it
	}
	registered := map[string]bool{}
	for _, r := range s.registered {
		registered[r.pattern] = true
	}
	paths := doc["paths"].(map[string]any)
	dropped := false
	for p, ops := range paths {
		ops := ops.(map[string]any)
		for m := range ops {
			if httpMethods[m] && !registered[strings.ToUpper(m)+" "+p] {
				delete(ops, m)
				dropped = true
			}
		}
		if len(ops) == 0 {
			delete(paths, p)
		}
	}
	if !dropped {
		return openAPI
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("api: openapi.json: " + err.Error())
	}
	return append(out, '\n')
}

// httpMethods are the keys of an OpenAPI path item that are operations.
var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.doc)
}
