//go:build !unix

package claudecode

// Lock is a no-op where flock(2) is missing: concurrent hooks of one
// session may then number their events alike, and the stream refuses the
// later of two events with the same seq.
func (h History) Lock() (func(), error) { return func() {}, nil }
