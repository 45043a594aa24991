package main

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/monitor"
)

// peakHeap runs f while sampling the heap, and returns the most heap in
// use seen above what was in use before f.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	return peak - base
}

// TestCheckMemoryFlat checks a generated event stream of one run and one
// four times as large, and fails when the heap the streaming check uses
// grows with the file: reading it whole would hold every event.
func TestCheckMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("generates large trace files")
	}
	rf := ruleFlags{rules: []string{"testdata/check/rules.yaml"}}
	eng, err := loadEngine(&rf, config.RulesConfig{}, false)
	if err != nil {
		t.Fatal(err)
	}
	// A low GC target keeps the peak close to what is live: at the default
	// the heap doubles between collections, and the peaks of two runs
	// would differ by that, not by what the reading retains.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	dir := t.TempDir()
	var peaks [2]uint64
	var sizes [2]int64
	for i, n := range []int{20000, 80000} {
		p := filepath.Join(dir, "s.jsonl")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := gen.WriteStream(f, 1, n); err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		sizes[i] = st.Size()
		f.Close()
		peaks[i] = peakHeap(func() {
			checked, done, err := streamChecks([]string{p}, config.TraceConfig{}, []*monitor.Engine{eng}, io.Discard, newProgress(io.Discard, 1, progressMin, "", ""))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := writeCheck(eng.Rules(), checked, t.TempDir(), filepath.Join(dir, "v")); err != nil {
				t.Fatal(err)
			}
			done()
		})
	}
	grew := int64(peaks[1]) - int64(peaks[0])
	t.Logf("files of %d and %d bytes: peak heap %d and %d bytes", sizes[0], sizes[1], peaks[0], peaks[1])
	if grew > (sizes[1]-sizes[0])/4 {
		t.Errorf("the peak heap grew by %d bytes for a file %d bytes larger: reading retains memory with the file", grew, sizes[1]-sizes[0])
	}
}
