package worker

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport/jstest"
)

// TestDeliveryLostInTransit: the server delivers an event that never
// reaches the worker (as when a connection drops while a fetch is on its
// way, in a node loss). The worker is connected through a proxy
// that removes the first delivery of the events stream from what the
// server sends it. The partition must notice the hole in the consumer's
// delivery sequence and start again from its checkpoint: acking the
// events after the hole (ack all) would ack the lost one too, and the run
// would be judged with a gap.
func TestDeliveryLostInTransit(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	runs, order, _ := fleet(20)
	want := expected(t, set, runs)
	for _, ev := range order {
		publish(t, js, ev, schema.EventMsgID(ev.RunID, ev.Seq))
	}
	proxy := dropFirstDelivery(t, nc.ConnectedUrl(), "$JS.ACK."+schema.StreamEvents+".")
	ncW, jsW := jstest.Connect(t, proxy.url)
	_, cancel, done := startWorker(t, ncW, jsW, "w1", set, func(*Worker) {}) // gap timeout 300ms
	waitFor(t, 20*time.Second, "all verdicts", func() bool { return verdictCount(js) >= total(want) })
	time.Sleep(600 * time.Millisecond) // anything extra, such as a gap's verdict, would show up now
	cancel()
	<-done
	if n := proxy.dropped.Load(); n != 1 {
		t.Fatalf("the proxy removed %d deliveries, want 1: the test did not lose what it is about", n)
	}
	got, n := stored(t, js)
	sameVerdicts(t, got, n, want)
}

// lossyProxy forwards NATS connections to a server, removing from what the
// server sends the first message whose reply subject starts with a prefix.
type lossyProxy struct {
	url     string
	dropped atomic.Int32
}

func dropFirstDelivery(t *testing.T, serverURL, replyPrefix string) *lossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{url: "nats://" + ln.Addr().String()}
	addr := serverURL[len("nats://"):]
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			open = append(open, client, server)
			mu.Unlock()
			conns.Add(2)
			go func() { defer conns.Done(); io.Copy(server, client); server.Close() }()
			go func() { defer conns.Done(); p.filter(client, server, []byte(replyPrefix)); client.Close() }()
		}
	}()
	return p
}

// filter copies the server's protocol to the client frame by frame,
// leaving out the first MSG or HMSG whose reply subject has the prefix.
func (p *lossyProxy) filter(client io.Writer, server io.Reader, prefix []byte) {
	r := bufio.NewReader(server)
	w := bufio.NewWriter(client)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		frame := line
		fields := bytes.Fields(line)
		if len(fields) > 0 && (bytes.Equal(fields[0], []byte("MSG")) || bytes.Equal(fields[0], []byte("HMSG"))) {
			size, err := strconv.Atoi(string(fields[len(fields)-1]))
			if err != nil {
				return
			}
			payload := make([]byte, size+2) // and its CRLF
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			withReply := 5 // MSG subject sid reply size
			if bytes.Equal(fields[0], []byte("HMSG")) {
				withReply = 6 // HMSG subject sid reply header-size size
			}
			if len(fields) == withReply && bytes.HasPrefix(fields[3], prefix) && p.dropped.CompareAndSwap(0, 1) {
				continue
			}
			frame = append(line, payload...)
		}
		if _, err := w.Write(frame); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}
