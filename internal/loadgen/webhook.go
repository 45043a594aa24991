package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
)

// webhook is a loopback HTTP receiver subscribed, in the alert stage's
// bucket, to every violation: the time from an event's publish to its
// violation's webhook arriving is the latency a subscriber sees.
type webhook struct {
	srv *http.Server
	key string
	l   *load
}

// startWebhook listens on a loopback port and stores a webhook
// subscription to it, then waits for the alert stage to read it (it reads
// the subscriptions at most a second old). The subscription is removed
// when ctx ends.
func (l *load) startWebhook(ctx context.Context) error {
	bucket := l.opts.Subjects.Bucket(schema.BucketAlerts)
	kv, err := l.query.KeyValue(ctx, bucket)
	if err != nil {
		return fmt.Errorf("loadgen: the webhook needs the alert stage's bucket %s: %w", bucket, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("loadgen: webhook: %w", err)
	}
	w := &webhook{l: l}
	w.srv = &http.Server{Handler: http.HandlerFunc(w.receive), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.srv.Serve(ln) }()
	s := alert.Subscription{ID: "loadgen-" + nuid.Next(), Webhook: "http://" + ln.Addr().String() + "/"}
	w.key = "sub." + s.ID
	if err := alert.PutSubscription(ctx, kv, s); err != nil {
		w.srv.Close()
		return fmt.Errorf("loadgen: webhook subscription: %w", err)
	}
	if err := sleep(ctx, 1500*time.Millisecond); err != nil {
		w.stop(kv)
		return err
	}
	go func() {
		<-ctx.Done()
		w.stop(kv)
	}()
	return nil
}

// receive records the latency of one delivery: its run and the seq of the
// event that caused the violation.
func (w *webhook) receive(rw http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var n alert.Notification
	if err == nil {
		err = json.Unmarshal(body, &n)
	}
	if err != nil || n.Event == nil {
		http.Error(rw, "not an alert", http.StatusBadRequest)
		return
	}
	if i := w.l.gen.RunIndex(n.Run); i >= 0 {
		w.l.rec.receivedWebhook(i, n.Event.Seq, now)
	}
	rw.WriteHeader(http.StatusNoContent)
}

// stop removes the subscription and closes the receiver.
func (w *webhook) stop(kv jetstream.KeyValue) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = alert.Delete(ctx, kv, w.key)
	_ = w.srv.Close()
}
