package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns the path of the headless browser: $PONENS_CHROMIUM, or
// Debian's chromium package. Without one the browser tests are skipped,
// except under CI (CI set), where .ci/run installs it and its absence is a
// failure.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a headless browser")
	}
	for _, p := range []string{os.Getenv("PONENS_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium at /usr/bin/chromium: .ci/run installs Debian's chromium package (apt-get install chromium)")
	}
	t.Skip("no chromium (apt-get install chromium, or set PONENS_CHROMIUM): the browser tests are skipped")
	return ""
}

// browser is one headless Chromium for a test, with a fresh profile, and
// what its pages wrote to the console.
type browser struct {
	t       *testing.T
	ctx     context.Context
	mu      sync.Mutex
	console []string // console.error calls, exceptions, and error log entries
	shots   string   // where screenshots go
}

// newBrowser starts Chromium headless with a fresh user-data-dir and the
// flags that keep it off the network (the machine has none), at a
// 1440×900 window. It is stopped when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("lang", "en-GB"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, shots: os.Getenv("PONENS_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = t.TempDir()
	} else if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx); err != nil { // starts the browser and its tab
		t.Fatalf("starting chromium: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); b.listen(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// listen records what the page says is wrong: console.error and
// console.assert calls, uncaught exceptions and rejections, and error
// entries of the browser log (failed loads, refused content), until ctx ends.
func (b *browser) listen(ctx context.Context) {
	for m, err := range chromedp.Console(ctx) {
		if err != nil {
			return
		}
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleException, "assert":
		default:
			continue
		}
		line := fmt.Sprintf("%s: %s", m.Type, m.Text)
		if m.URL != "" {
			line += fmt.Sprintf(" (%s:%d:%d)", m.URL, m.Line+1, m.Column+1)
		}
		if m.Source != "" {
			line += " [" + m.Source + "]"
		}
		b.mu.Lock()
		b.console = append(b.console, line)
		b.mu.Unlock()
	}
}

// takeConsole returns and forgets what was recorded.
func (b *browser) takeConsole() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.console
	b.console = nil
	return c
}

// open loads url and waits until the page has rendered (body[data-ready]).
func (b *browser) open(url string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`))); err != nil {
		b.t.Fatalf("loading %s: %v\nconsole: %v", url, err, b.takeConsole())
	}
}

// clean fails the test when the page wrote errors to the console, except
// lines containing one of allowed.
func (b *browser) clean(page string, allowed ...string) {
	b.t.Helper()
	for _, line := range b.takeConsole() {
		ok := false
		for _, a := range allowed {
			ok = ok || strings.Contains(line, a)
		}
		if !ok {
			b.t.Errorf("%s: %s", page, line)
		}
	}
}

// eval evaluates the JavaScript expression js in the page and decodes its
// JSON value into out.
func (b *browser) eval(js string, out any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", js, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.t.Fatalf("evaluating %s: %v (%s)", js, err, raw)
	}
}

// text is the trimmed text of the first element matching the CSS selector
// sel, or "<missing>".
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.textContent.trim() : "<missing>"; })()`, sel), &s)
	return s
}

// rows returns, for each row (tr[data-row]) under the CSS selector sel,
// the text of its cells that carry data-k, by key.
func (b *browser) rows(sel string) map[string]map[string]string {
	b.t.Helper()
	out := map[string]map[string]string{}
	b.eval(fmt.Sprintf(`Object.fromEntries([...document.querySelectorAll(%q)].map((tr) =>
		[tr.dataset.row, Object.fromEntries([...tr.querySelectorAll('[data-k]')].map((td) => [td.dataset.k, td.textContent.trim()]))]))`, sel+" tr[data-row]"), &out)
	return out
}

// waitFor polls the JavaScript condition js in the page until it is true.
func (b *browser) waitFor(what, js string, d time.Duration) {
	b.t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		var ok bool
		b.eval(js, &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waited %v for %s (%s)", d, what, js)
		}
	}
}

// screenshot writes a PNG of the whole page as name.png.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

// click clicks the first element matching the CSS selector sel.
func (b *browser) click(sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
}
