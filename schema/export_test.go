package schema

// ReadAheadEverywhere makes the reference reader read ahead in every
// actions array, however short, and returns how to undo it and how many
// read-aheads it has taken so far.
func ReadAheadEverywhere() (restore func(), joins func() int64) {
	old := parallelActionsMin
	parallelActionsMin = 0
	return func() { parallelActionsMin = old }, readAheadJoins.Load
}
