// Package remote asks the monitor worker that owns a run, over NATS
// request/reply, whether a proposed step may run now (Decide): the
// worker answers with monitor.Run.Decide on the run's live state. It is
// the client side of the decisions `ponens decide --run` and agents use;
// the worker side (monitor/worker) answers with the refusal codes defined
// here (DecideRunEnded, DecideRunUnknown), which Decide turns into
// ErrRunEnded and ErrRunUnknown. While no worker can answer yet (a
// partition moving, a takeover rebuilding runs) Decide asks again until
// its context ends: a step is never allowed by default.
package remote
