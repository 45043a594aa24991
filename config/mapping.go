package config

// MappingConfig configures how the tool calls of imported agent sessions
// become actions (ingest/mapping).
type MappingConfig struct {
	// File is a YAML mapping file whose rules come before the shipped
	// table (or replace it, when the file says replace: true). Empty: the
	// shipped table alone.
	File string `mapstructure:"file" yaml:"file"`
}
