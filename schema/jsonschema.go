package schema

import _ "embed"

// EventJSONSchema is the JSON Schema (draft 2020-12) of the event envelope,
// for producers in other languages. It agrees with decoding plus
// Event.Validate, except that it counts runId's length in characters where
// Validate counts bytes.
//
//go:embed event.schema.json
var EventJSONSchema []byte
