// Package gateway is the HTTP ingest gateway: agents that cannot speak NATS
// POST their events, and the gateway validates them at the edge, publishes
// the valid ones and dead-letters the rest, answering with what happened to
// each.
//
// # API
//
//	POST /v1/events   one event, a JSON array of events, or JSON lines
//	GET  /healthz     {"status": "ok"}, or 503 when the NATS side is down
//	GET  /v1/streams  {"streams": [...]}: how full each stream is against its
//	                  bounds (jetstream.StreamUsage), with the alarm flag
//
// The body's Content-Type says its form: application/json (or none) for one
// object or an array of them (a body of several objects, one per line, is
// taken as JSON lines too); application/x-ndjson, application/jsonl,
// application/x-jsonlines for JSON lines. Anything else (text/plain too) is
// 415. With a token configured, POST needs "Authorization: Bearer <token>"
// (401 otherwise), and so does /v1/streams; /healthz needs nothing.
//
// Each event is decoded and validated like a line of an event file
// (schema.DecodeEvent), except for ordering, which the monitor workers
// check across requests. Every valid event is published and every invalid
// one goes to the dead-letter stream with its reason (malformed, invalid,
// unknown-type, too-large, and conflicting-duplicate for an event whose
// run and seq are stored with other content), the error and its original
// bytes. The response
// counts them and lists each problem:
//
//	{"accepted": 2, "stored": 1, "duplicates": 1, "rejected": 1, "conflicts": 0,
//	  "errors": [{"line": 3, "column": 41, "index": 2, "field": "type",
//	  "reason": "unknown-type",
//	  "error": "unknown event type: expected one of run.start, …, got \"nope\""}],
//	  "events": [{"line": 1, "index": 0, "status": "stored"},
//	  {"line": 2, "index": 1, "status": "duplicate"},
//	  {"line": 3, "index": 2, "status": "rejected"}]}
//
// line and column locate the problem in the body (1-based); index is the
// event's position among the body's events (0-based: the array index, or
// the count of non-blank lines before it); field is the JSON path in the
// event, "" for the whole event.
//
// # Status codes
//
//	200  every event accepted (also for an empty array)
//	207  some accepted, some rejected: read errors
//	422  every event rejected
//	400  the body is not JSON at all (empty, or not starting with { or [);
//	     it is dead-lettered as malformed
//	413  the body exceeds the size limit; its first bytes are dead-lettered
//	     as too-large, with the size noted
//	401  token missing or wrong;  415  unsupported Content-Type
//	429  the client's refused inputs exceed Options.DeadLetterRate: the
//	     refused events are listed but not dead-lettered
//	503  busy (with Retry-After): NewServer's concurrent request limit or
//	     in-flight body budget is taken; or
//	     the events or dead letters could not be stored (NATS down, or the
//	     EVENTS stream at its bound: "the stream is full", and nothing stored
//	     was evicted to make room); accepted counts those that were. Sending the same body again is safe: events carry
//	     their Nats-Msg-Id, so the stored ones are not stored twice (dead
//	     letters may be).
//
// "accepted" means stored in the EVENTS stream, not merely received:
// "stored" now, or a "duplicate" of an event stored before (nothing was
// stored again). 207 is used for partial success, as in
// WebDAV, so that a client that checks only for 2xx learns nothing was
// lost while a client that reads the body learns what was rejected; 422
// keeps a body of only bad events a client error.
package gateway
