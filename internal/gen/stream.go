package gen

import (
	"bufio"
	"fmt"
	"io"
)

// streamActions cycle in each run of WriteStream: a read, an edit of what
// was read, a test run, a commit.
var streamActions = [...]string{
	`"type": "ReadFile", "category": "activity", "evidence": [{"type": "FileRef", "ref": "src/f%d.py"}], "status": "completed"`,
	`"type": "EditFile", "category": "activity", "evidence": [{"type": "FileRef", "ref": "src/f%d.py"}], "status": "completed"`,
	`"type": "RunTests", "category": "activity", "evidence": [{"type": "FileRef", "ref": "tests/f%d.py"}], "status": "completed"`,
	`"type": "GitCommit", "category": "activity", "evidence": [{"type": "FileRef", "ref": "src/f%d.py"}], "status": "completed"`,
}

// WriteStream writes an event stream of events events in total to w, as
// runs runs interleaved round robin (run r0, r1, …): each run starts, then
// cycles through a read, an edit, a test run and a commit (of 100 files
// in turn), and finishes
// with its last event. It is the input of the offline benchmarks: large,
// valid and deterministic.
func WriteStream(w io.Writer, runs, events int) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	per := events / runs
	for i := range per {
		for r := range runs {
			seq := i + 1
			ts := fmt.Sprintf("2026-01-01T%02d:%02d:%02dZ", (i/3600)%24, (i/60)%60, i%60)
			switch {
			case i == 0:
				fmt.Fprintf(bw, `{"v": 1, "runId": "r%d", "seq": 1, "ts": "%s", "type": "run.start", "start": {"trigger": {"type": "UserRequest"}}}`+"\n", r, ts)
			case i == per-1:
				fmt.Fprintf(bw, `{"v": 1, "runId": "r%d", "seq": %d, "ts": "%s", "type": "run.finish", "end": {"outcome": {"type": "ProcessCompleted"}}}`+"\n", r, seq, ts)
			default:
				a := streamActions[(i-1)%len(streamActions)]
				fmt.Fprintf(bw, `{"v": 1, "runId": "r%d", "seq": %d, "ts": "%s", "type": "action", "action": {"id": %d, `+a+"}}\n", r, seq, ts, i, (i-1)/len(streamActions)%100)
			}
		}
	}
	return bw.Flush()
}
