package schema

import (
	"strings"
	"testing"
)

func TestMigrations(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 2 || ms[0].Version != 1 || ms[0].Name != "0001_tables" {
		t.Fatalf("got %+v", ms)
	}
	for _, m := range ms {
		for i, s := range m.Statements {
			if s == "" || strings.HasSuffix(s, ";") || strings.HasPrefix(strings.TrimSpace(s), "--") {
				t.Errorf("%s statement %d: %q", m.Name, i+1, s)
			}
		}
	}
	if _, err := parseMigration("x.sql"); err == nil || !strings.Contains(err.Error(), "NNNN_name.sql") {
		t.Errorf("a bad name: %v", err)
	}
}
