// Package benchreport measures what the performance table of the README
// and docs/performance.md states, in one run, and writes it as Markdown
// with the machine it ran on and the command that reproduces it.
//
// The evaluator and the memory per open run are measured in process, with
// testing.Benchmark and heap statistics. The offline check, the pipeline
// end to end on one machine, and the pipeline with three workers on a
// loopback NATS cluster are measured by running the ponens binary itself
// (and, for the cluster, three nats-server processes) as child processes,
// so each figure is what a user's command does, resident memory included.
//
// A figure that cannot be measured here (no nats-server binary, no store
// engine, not run from a clone of the repository) is reported as not
// measured, with the reason; it is never left out silently.
package benchreport
