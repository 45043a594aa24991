package api

import (
	_ "embed"
	"encoding/json"
	"net/http"
)

// openAPI is the OpenAPI 3.1 description of every route of the service;
// TestOpenAPI checks it against the routes registered.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the service's OpenAPI 3.1 document (JSON).
func OpenAPI() []byte { return openAPI }

// document is the OpenAPI document of this server: the embedded one,
// without /v1/stream when the server follows no live verdicts (it does
// not register the route then, and the dashboard reads the document to
// know whether it may open the live feed).
func (s *Server) document() []byte {
	if s.opts.Live != nil {
		return openAPI
	}
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		panic("api: the embedded openapi.json does not decode: " + err.Error()) // TestOpenAPI reads it
	}
	delete(doc["paths"].(map[string]any), "/v1/stream")
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("api: openapi.json: " + err.Error())
	}
	return append(out, '\n')
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.doc)
}
