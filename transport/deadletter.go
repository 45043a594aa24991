package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
)

// maxErrorHeader bounds the Ponens-Error header; longer messages are cut.
const maxErrorHeader = 2048

// defaultMaxDeadLetter is the payload limit when the connection's
// max_payload is unknown.
const defaultMaxDeadLetter = 1 << 20

// reasonToken is what a reason must look like: one subject token.
var reasonToken = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// ValidReason reports whether r can be a dead-letter reason: one
// lowercase subject token, such as schema.ReasonSeqGap.
func ValidReason(r string) bool { return reasonToken.MatchString(r) }

// DeadLetters sends refused inputs to the DEADLETTER stream, on
// schema.Subjects.DeadLetter(reason), with the reason, the source and the
// error in headers and the refused bytes as the body. It is safe for
// concurrent use.
type DeadLetters struct {
	js       natsjs.JetStream
	subjects schema.Subjects
}

// NewDeadLetters returns a DeadLetters publishing through js.
func NewDeadLetters(js natsjs.JetStream, subjects schema.Subjects) *DeadLetters {
	return &DeadLetters{js: js, subjects: subjects}
}

// DeadLetterID is the Nats-Msg-Id of a dead letter: dl:<reason>:<hash>,
// the hash a SHA-256 of the error message and the whole refused input
// (before any cut). The same input refused again for the same reason and
// error within the stream's duplicate window — a worker replaying after a
// crash, a client sending a bad request again — is stored once.
func DeadLetterID(reason, errText string, payload []byte) string {
	h := sha256.New()
	h.Write([]byte(errText))
	h.Write([]byte{0})
	h.Write(payload)
	return "dl:" + reason + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// Send stores payload as a dead letter and waits for the acknowledgement.
// reason is a stable code (schema.ReasonMalformed, …; one subject token),
// source says where it was refused (schema.SourceGateway, …), and err says
// why and where (file, line, field). A payload larger than the server
// accepts is cut to fit and marked with schema.HeaderTruncated, the
// original size. Its message id is DeadLetterID(reason, the error, payload).
func (d *DeadLetters) Send(ctx context.Context, reason, source string, err error, payload []byte) error {
	if !reasonToken.MatchString(reason) {
		return fmt.Errorf("dead letter: reason %q is not a lowercase subject token", reason)
	}
	msg := nats.NewMsg(d.subjects.DeadLetter(reason))
	text := "(no error given)"
	if err != nil {
		text = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	if len(text) > maxErrorHeader {
		text = strings.ToValidUTF8(text[:maxErrorHeader], "") + "…"
	}
	msg.Header.Set(schema.HeaderError, text)
	msg.Header.Set(schema.HeaderReason, reason)
	msg.Header.Set(schema.HeaderSource, source)
	msg.Header.Set(natsjs.ExpectedStreamHeader, schema.StreamDeadLetter)
	msg.Header.Set(natsjs.MsgIDHeader, DeadLetterID(reason, text, payload))
	limit := int64(defaultMaxDeadLetter)
	if nc := d.js.Conn(); nc != nil && nc.MaxPayload() > 0 {
		limit = nc.MaxPayload() - headerSize(msg.Header) - 64 // room for the Truncated header
	}
	if int64(len(payload)) > limit {
		msg.Header.Set(schema.HeaderTruncated, strconv.Itoa(len(payload)))
		payload = payload[:max(limit, 0)]
	}
	msg.Data = payload
	if _, err := d.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("dead letter %s: %w", reason, err)
	}
	return nil
}
