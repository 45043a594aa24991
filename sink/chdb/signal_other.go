//go:build !linux

package chdb

// keepGoSignals runs start; libchdb is built for Linux only.
func keepGoSignals(start func()) { start() }
