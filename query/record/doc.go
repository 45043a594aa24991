// Package record answers the record query: what a trace established about
// a symbol, and whether it still describes the source. It is the logic of
// `ponens trace symbols` (Record.Index) and `ponens trace symbol`
// (Record.Detail, Record.RegionsOf), pure over a Record: Extract builds
// one from loaded runs, and a store may keep its Entries and Gaps and ask
// the same questions of them without the trace.
//
// # Entries
//
// Every result artifact about a symbol is an entry: VerificationResult,
// Observation and UserApproval (kind verification),
// StateSpaceAnalysisResult or Decomposition (decomposition),
// ConformanceResult and CoSimulationResult (conformance), IMLModel and
// FormalModel (model), TestResult, CommandResult and GeneratedTests
// (tests). Its ref is the artifact's ref, else its id.
//
//   - Symbol: payload.target_symbol, else the target_symbol of the
//     VerificationGoal a verification result derives from, else the one
//     target_symbol in its derived_from lineage (two different ones: no
//     symbol, no entry).
//   - File: payload.path or payload.file, else the nearest source in its
//     lineage (breadth first): a SourceCode artifact (its payload path,
//     file or target, else its name) or a "file@hash" in a derived_from
//     that names no artifact; else a SourceCode artifact whose
//     payload.symbols declares the symbol.
//   - Source hash ("file@hash", derived_from in the answers): that
//     "file@hash", or the nearest SourceCode's own "file@hash" or payload
//     sha256 or hash. An older version of the file further up the lineage
//     is never taken for it.
//   - Grade: the oracle's evidence_strength (proof → proved, sat →
//     witnessed, tests → tested, static_analysis → checked, attested →
//     attested), else unranked; a verification whose status is unknown or
//     bounded established no proof and is unranked.
//   - Established: the artifact's created_at, else its producing action's
//     timestamp, else (in an event stream, not a reference trace, whose
//     event times are derived) the event's ts.
//
// # Latest wins
//
// An entry is superseded when an artifact of its run lists it in
// supersedes. What stands for a (symbol, file) is, per (kind, claim), the
// latest entry not superseded, where the claim is the goal of a
// verification and the reference of a conformance check (two goals proved
// about one symbol both stand). The index shows the newest of them.
//
// # Freshness
//
// An entry is out_of_date when the trace shows its file changed after the
// point the entry's source was recorded (an edit action — EditFile,
// CreateFile, DeleteFile, WriteFile, or a file.write / file.delete tool
// call — that did not fail, or a SourceCode version with another hash; the
// last of these wins, so a file edited back to the recorded hash is not
// changed), or when the file in the checkout (--cwd) is missing or hashes
// otherwise than recorded. A recorded hash is hex digits, maybe
// abbreviated, maybe prefixed sha256: or git: (sha1:); without a prefix it
// matches the sha256 of the content or its git blob id. An entry with no
// file or no hash is unknown, and so is one the checkout cannot tell
// about. The freshness of a (symbol, file) is the worst of what stands
// (out_of_date, then unknown, then fresh).
//
// # Gaps, shape, regions
//
// Gaps are the residuals whose effective status (their own, absent meaning
// Open, then every ResidualResolution naming them, in order) is Open and
// that name the symbol (target) or one of its entries (target,
// related_artifact_ids, derived_from). Shape, scope and assumptions come
// from the standing decomposition: splits_on lists the variables its
// constraints mention (names starting lower-case, not keywords; dotted
// paths whole), by the number of constraints mentioning each; the
// outcomes are the distinct region labels (a region's outcome, else its
// invariant). A Where narrows the regions by substring, outcome label, or
// the regions standing conformance checks found diverged or raised
// (results[{region, outcome}], or diverged / raised as lists of region
// ids); when the record cannot say which regions, the answer says so in
// Unknown rather than returning none.
//
// # Versions
//
// Extract reads trace spec SpecMajor.x: a run.start whose spec_version has
// another major version is refused with a *VersionError naming the version
// needed. A trace without spec_version is read.
package record
