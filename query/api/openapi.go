package api

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 description of every route of the service;
// TestOpenAPI checks it against the routes registered.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the service's OpenAPI 3.1 document (JSON).
func OpenAPI() []byte { return openAPI }

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
