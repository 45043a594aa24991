package loadgen

import (
	"encoding/json"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/ponens/ponens/schema"
)

// GenConfig shapes the events of a load.
type GenConfig struct {
	// Runs is the number of concurrent runs.
	Runs int
	// Seed makes the load reproducible: the same seed and the same number
	// of events give the same events.
	Seed uint64
	// Violations is the chance that an action is a mistake instead of the
	// next step of its run's work, 0..1. Each run makes each kind of
	// mistake at most once (see the package documentation), so a run breaks
	// at most NumMistakes rules.
	Violations float64
	// RunPrefix starts every runId: run i is RunPrefix + i.
	RunPrefix string
}

// The kinds of mistakes a run makes: each is one action that breaks its own
// rule of examples/rules the first time it happens in a run. The two edits
// of files never read also break research_before_edit, the first time.
const (
	mistakeEnvWrite      = iota // a tool call writing config/.env: no-env-writes (POLICY.md)
	mistakeSecretEdit           // an edit of .env: no_secret_edits
	mistakeUnprovedEdit         // a payments/ edit without a proof: reasoning_required_for_high_stakes
	mistakeDanglingInput        // an action consuming an artifact nobody produced: data_flow_integrity

	// NumMistakes is the number of kinds of mistakes.
	NumMistakes = iota
)

// The steps of a run's work cycle.
const (
	stepRead   = iota // ReadFile f
	stepVerify        // Verify, producing a proof (payments/ files only)
	stepEdit          // EditFile f, consuming the proof on payments/ files
	stepTest          // RunTests: sometimes failed, then again
	stepCommit        // GitCommit
	stepDeploy        // Deploy, every fourth cycle
)

var files = []string{"src/api.py", "src/db.py", "src/auth.py", "payments/refund.py", "payments/charge.py", "docs/README.md"}

const highStakes = "payments/"

// runGen is the state of one run: what it did last and which mistakes it
// has made. It is small: a load of 100,000 runs keeps 100,000 of them.
type runGen struct {
	seq     uint64 // last seq generated
	actions int64  // last action id
	proof   int64  // action id of the Verify of this cycle's edit
	cycles  uint32 // completed work cycles
	step    uint8
	file    uint8
	made    uint8 // mistakes made, one bit per kind
	dirty   bool  // an edit since the last completed test
}

// Generator makes the events of a load, reproducibly from a seed: one
// run.start per run, then actions of the runs in turn (round robin), then
// one run.finish per run. It is not safe for concurrent use.
type Generator struct {
	cfg      GenConfig
	rng      *rand.Rand
	runs     []runGen
	next     int // the run whose action comes next
	mistakes int
	base     time.Time
}

// NewGenerator returns a generator of c's load.
func NewGenerator(c GenConfig) *Generator {
	return &Generator{
		cfg:  c,
		rng:  rand.New(rand.NewPCG(c.Seed, 0x10ad)),
		runs: make([]runGen, c.Runs),
		base: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
	}
}

// RunID is the runId of run i.
func (g *Generator) RunID(i int) string { return g.cfg.RunPrefix + strconv.Itoa(i) }

// RunIndex is the index of the run with runID, or -1 when runID is not one
// of this load's.
func (g *Generator) RunIndex(runID string) int {
	p := g.cfg.RunPrefix
	if len(runID) <= len(p) || runID[:len(p)] != p {
		return -1
	}
	i, err := strconv.Atoi(runID[len(p):])
	if err != nil || i < 0 || i >= len(g.runs) || g.RunID(i) != runID {
		return -1
	}
	return i
}

// Mistakes is the number of mistakes generated so far.
func (g *Generator) Mistakes() int { return g.mistakes }

// event stamps the next envelope of run i.
func (g *Generator) event(i int, typ schema.EventType) *schema.Event {
	r := &g.runs[i]
	r.seq++
	return &schema.Event{V: schema.EnvelopeVersion, RunID: g.RunID(i), Seq: r.seq,
		TS: g.base.Add(time.Duration(r.seq) * time.Second), Type: typ}
}

// Start is the run.start of run i; it must be run i's first event.
func (g *Generator) Start(i int) *schema.Event {
	ev := g.event(i, schema.TypeRunStart)
	ev.Start = &schema.RunStart{Agent: agent(i), Trigger: json.RawMessage(`{"type":"UserRequest"}`),
		HighStakesPaths: []string{highStakes}}
	return ev
}

// Finish is the run.finish of run i.
func (g *Generator) Finish(i int) *schema.Event {
	ev := g.event(i, schema.TypeRunFinish)
	ev.End = &schema.RunEnd{Outcome: json.RawMessage(`{"type":"ProcessCompleted"}`)}
	return ev
}

func agent(i int) string { return "bench-agent-" + strconv.Itoa(i%50) }

// Next returns the next action of the load and the index of its run: the
// runs take turns.
func (g *Generator) Next() (int, *schema.Event) {
	i := g.next
	g.next++
	if g.next == len(g.runs) {
		g.next = 0
	}
	r := &g.runs[i]
	var a schema.Action
	if g.rng.Float64() < g.cfg.Violations && r.made != 1<<NumMistakes-1 {
		a = g.mistake(i, r)
	} else {
		a = g.work(r)
	}
	r.actions++
	a.ID = r.actions
	for j := range a.Artifacts {
		a.Artifacts[j].ProducerActionID = &a.ID
	}
	ev := g.event(i, schema.TypeAction)
	ev.Action = &a
	return i, ev
}

// mistake makes one of the kinds of mistakes run i has not made yet.
func (g *Generator) mistake(i int, r *runGen) schema.Action {
	left := ^r.made & (1<<NumMistakes - 1)
	k := g.rng.IntN(bits.OnesCount8(left))
	kind := 0
	for ; ; kind++ {
		if left&(1<<kind) != 0 {
			if k == 0 {
				break
			}
			k--
		}
	}
	r.made |= 1 << kind
	g.mistakes++
	switch kind {
	case mistakeEnvWrite:
		return schema.Action{Type: "ToolCall", Category: "activity", Capability: "file.write", ToolName: "write_file",
			Payload: json.RawMessage(`{"path":"config/.env"}`), WorkerID: agent(i)}
	case mistakeSecretEdit:
		r.dirty = true
		return edit(".env", nil)
	case mistakeUnprovedEdit:
		r.dirty = true
		return edit(highStakes+"unproved.py", nil)
	default: // mistakeDanglingInput
		return schema.Action{Type: "AnalyzeCode", Category: "activity", Status: "completed",
			Inputs: []string{"ghost-" + strconv.FormatUint(r.seq+1, 10)}, Evidence: fileRef(files[r.file])}
	}
}

// work is the next step of run r's work cycle: read a file, prove the edit
// when the file is high stakes, edit it, test until the tests pass, commit,
// and deploy every fourth cycle.
func (g *Generator) work(r *runGen) schema.Action {
	for {
		switch r.step {
		case stepRead:
			r.file = uint8(g.rng.IntN(len(files)))
			r.step = stepVerify
			return schema.Action{Type: "ReadFile", Category: "activity", Status: "completed", Evidence: fileRef(files[r.file])}
		case stepVerify:
			r.step = stepEdit
			if !isHighStakes(files[r.file]) {
				continue
			}
			r.proof = r.actions + 1 // this Verify's id
			vr := proofID(r.proof)
			return schema.Action{Type: "Verify", Category: "reasoning", Status: "completed", Outputs: []string{vr},
				Artifacts: []schema.Artifact{{ID: vr, Type: "VerificationResult", Payload: json.RawMessage(`{"status":"proved"}`)}}}
		case stepEdit:
			r.step = stepTest
			r.dirty = true
			var in []string
			if isHighStakes(files[r.file]) {
				in = []string{proofID(r.proof)}
			}
			return edit(files[r.file], in)
		case stepTest:
			if g.rng.IntN(6) == 0 {
				return schema.Action{Type: "RunTests", Category: "activity", Status: "failed", ResultSummary: "1 failed"}
			}
			r.step = stepCommit
			r.dirty = false
			return schema.Action{Type: "RunTests", Category: "activity", Status: "completed", ResultSummary: "all passed"}
		case stepCommit:
			r.cycles++
			r.step = stepRead
			if r.cycles%4 == 0 {
				r.step = stepDeploy
			}
			return schema.Action{Type: "GitCommit", Category: "gateway", Status: "completed"}
		default: // stepDeploy
			r.step = stepRead
			if r.dirty { // a mistaken edit since the tests: deploying would break one more rule
				continue
			}
			return schema.Action{Type: "Deploy", Category: "gateway", Status: "completed"}
		}
	}
}

func edit(file string, inputs []string) schema.Action {
	return schema.Action{Type: "EditFile", Category: "activity", Status: "completed", Rationale: "fix",
		Inputs: inputs, Evidence: fileRef(file)}
}

func isHighStakes(f string) bool {
	return len(f) > len(highStakes) && f[:len(highStakes)] == highStakes
}

func proofID(action int64) string { return "vr-" + strconv.FormatInt(action, 10) }

func fileRef(f string) []schema.Evidence { return []schema.Evidence{{Type: "FileRef", Ref: f}} }
