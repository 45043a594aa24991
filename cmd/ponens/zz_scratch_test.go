package main

import (
	"io"
	"os"
	"testing"

	"github.com/ponens/ponens/config"
)

func TestZZRef(t *testing.T) {
	rf := ruleFlags{formulas: []string{"G(GitCommit → P(RunTests))"}, ids: []string{"t"}}
	engs, err := loadEngines(&rf, config.RulesConfig{}, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	checked, done, err := streamChecks([]string{os.Getenv("ZZFILE")}, config.TraceConfig{}, engs, io.Discard, newProgress(io.Discard, 1, progressMin, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeCheck(engs[0].Rules(), checked, t.TempDir(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	done()
}
