package schema

import (
	"fmt"
	"io"
	"runtime"
	"sync"
)

// eventStretch is how many events writeEventLines encodes at a time: for
// the generated traces (about 240 bytes per event line) a stretch is near
// the 256 KiB the content hash takes at a time.
const eventStretch = 1024

// encodedStretch is one stretch of events' lines, or the error of the
// first event of the stretch that could not be encoded.
type encodedStretch struct {
	buf []byte
	err error
}

// writeEventLines writes the AppendEventLine line of each event to w, in
// order. The events are encoded a stretch at a time on up to GOMAXPROCS
// goroutines, with at most two stretches per goroutine encoded ahead of
// what w has taken, so memory holds a few stretches whatever the number
// of events. An event that cannot be encoded ends it, naming the event
// (counted from 1); what was written before stays written.
func writeEventLines(w io.Writer, events []Event) error {
	n := (len(events) + eventStretch - 1) / eventStretch
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		var buf []byte
		for start := 0; start < len(events); start += eventStretch {
			var err error
			if buf, err = appendStretch(buf[:0], events, start); err != nil {
				return err
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	}
	// queue holds each stretch's result channel in stretch order: its
	// capacity bounds how far the encoding runs ahead of w.
	queue := make(chan chan encodedStretch, 2*workers)
	free := make(chan []byte, 2*workers+1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		defer close(queue)
		for start := 0; start < len(events); start += eventStretch {
			done := make(chan encodedStretch, 1)
			select {
			case queue <- done:
			case <-stop:
				return
			}
			var buf []byte
			select {
			case buf = <-free:
			default:
			}
			wg.Go(func() {
				out, err := appendStretch(buf[:0], events, start)
				done <- encodedStretch{buf: out, err: err}
			})
		}
	}()
	var err error
	for done := range queue {
		s := <-done
		if err == nil {
			err = s.err
			if err == nil {
				_, err = w.Write(s.buf)
			}
			if err != nil {
				close(stop)
			}
		}
		select {
		case free <- s.buf:
		default:
		}
	}
	wg.Wait()
	return err
}

// appendStretch appends the lines of the events of the stretch starting
// at start to dst.
func appendStretch(dst []byte, events []Event, start int) ([]byte, error) {
	end := min(start+eventStretch, len(events))
	for i := start; i < end; i++ {
		var err error
		if dst, err = AppendEventLine(dst, &events[i]); err != nil {
			return dst, fmt.Errorf("event %d: %w", i+1, err)
		}
	}
	return dst, nil
}
