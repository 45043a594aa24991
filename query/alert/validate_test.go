package alert

import (
	"strings"
	"testing"

	"github.com/ponens/ponens/schema"
)

// A subscription's channel is refused when nothing could be delivered on
// it: a wildcard or malformed subject, one outside <prefix>.notify., a
// webhook that is not an http(s) URL, or a listing's mask given as the
// secret.
func TestValidateChannel(t *testing.T) {
	fleet := schema.Subjects{Prefix: "fleet"}
	for _, c := range []struct {
		name string
		sub  Subscription
		want string // "" when accepted
	}{
		{"subject", Subscription{ID: "a", Subject: "fleet.notify.oncall"}, ""},
		{"wildcard", Subscription{ID: "a", Subject: "fleet.notify.>"}, "field subject: want a NATS subject to publish on"},
		{"empty token", Subscription{ID: "a", Subject: "fleet..notify"}, "field subject"},
		{"outside the prefix", Subscription{ID: "a", Subject: "foo.bar"}, "field subject: the alert stage publishes only under fleet.notify."},
		{"default prefix", Subscription{ID: "a", Subject: "ponens.notify.x"}, "under fleet.notify."},
		{"webhook", Subscription{ID: "a", Webhook: "https://hooks.example.com/x", Secret: "k3y"}, ""},
		{"not a URL", Subscription{ID: "a", Webhook: "not a url"}, "field webhook: want an http or https URL with a host"},
		{"ftp", Subscription{ID: "a", Webhook: "ftp://x/y"}, "field webhook"},
		{"no host", Subscription{ID: "a", Slack: "https:///path"}, "field slack"},
		{"masked secret", Subscription{ID: "a", Webhook: "https://hooks.example.com/x", Secret: "***"}, "field secret"},
		{"stream", Subscription{ID: "a", Stream: true}, ""},
	} {
		err := c.sub.ValidateFor(fleet)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := (Subscription{ID: "a", Subject: "ponens.notify.x"}).ValidateFor(schema.Subjects{}); err != nil {
		t.Errorf("the default prefix: %v", err)
	}
}
