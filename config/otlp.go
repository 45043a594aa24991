package config

import "fmt"

// OTLPConfig configures the OpenTelemetry receiver (POST /v1/traces on
// the gateway's address, and on Listen when set) and imports
// (ingest/otlp).
type OTLPConfig struct {
	// Listen is a host:port the receiver also serves POST /v1/traces on,
	// such as 127.0.0.1:4318, the OTLP/HTTP default; empty: only the
	// gateway's address.
	Listen string `mapstructure:"listen" yaml:"listen"`
	// MaxBodyBytes is the largest request body, compressed or not.
	MaxBodyBytes int64 `mapstructure:"max_body_bytes" yaml:"max_body_bytes"`
	// ModelCalls is what a model call span becomes: telemetry, action or
	// skip.
	ModelCalls string `mapstructure:"model_calls" yaml:"model_calls"`
}

func (o OTLPConfig) validate() []string {
	var probs []string
	switch o.ModelCalls {
	case "telemetry", "action", "skip":
	default:
		probs = append(probs, fmt.Sprintf("otlp.model_calls: expected telemetry, action or skip, got %q", o.ModelCalls))
	}
	if o.MaxBodyBytes <= 0 {
		probs = append(probs, fmt.Sprintf("otlp.max_body_bytes: expected a positive size, got %d", o.MaxBodyBytes))
	}
	return probs
}
