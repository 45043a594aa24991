// Package pipeline wires the long-lived parts of ponens once: the embedded
// NATS server (or a cluster to join), the streams, the HTTP ingest gateway,
// the monitor workers and their rule reloads, the alert stage, the sink
// into a store, and any further part a command adds (the query service).
// `ponens serve` runs every part in one process; `ponens bench` runs the
// same assembly; `ponens worker`, `ponens ingest`, `ponens sink` and
// `ponens alerts run` run one part each through the same code. cmd/ponens
// keeps the flags, the signals and what is printed.
//
// Every part is an Actor, a name and a Run(ctx) error; New connects and
// constructs the parts the Options ask for, Run runs them together until
// ctx ends or one fails, and Close releases what New took:
//
//	p, err := pipeline.New(ctx, opts)  // server, streams, connections, workers
//	defer p.Close()
//	p.Add(pipeline.Actor{Name: "query", Run: api.Run})
//	err = p.Run(ctx)
//
// Decisions:
//   - Each part takes its own options struct (GatewayOptions,
//     WorkersOptions, AlertOptions, SinkOptions), never the whole
//     configuration: the mapping from config keys to options is cmd's, as
//     Prometheus builds its EngineOpts in main.
//   - Connecting is a pair of functions the command gives (NATSOptions.Open
//     and Dial): how a client authenticates (role seeds, creds, TLS) and how
//     long it waits for a server, with the messages and exit codes every
//     one-shot command shares, belong to the command's configuration. The
//     pipeline decides which part connects in which role: a part whose role
//     is the provisioning connection's shares it, every other part has its
//     own connection, so that each is limited to its role.
//   - Run composes the actors with an errgroup rather than oklog/run: an
//     actor that returns nil (the demo publisher once it reported) lets the
//     others go on, as `ponens serve --demo` always did; the first error
//     ends every actor. Either way no goroutine outlives Run.
//   - The package is internal: it is the assembly of this binary, whose
//     options change with the commands; the parts it composes keep their
//     public packages.
//   - One slot for parts written elsewhere: Options.Extra and Add take any
//     Actor, so a query service (its server's Run) joins with one line.
package pipeline
