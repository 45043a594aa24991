package main

import (
	"encoding/json"
	"io"
)

// writeJSONLines writes one JSON object per row per line, without HTML
// escaping (formulas contain < and >).
func writeJSONLines[T any](w io.Writer, rows []T) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
