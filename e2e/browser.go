//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// Browser is headless Debian Chromium driven over the DevTools protocol
// (chromedp): the console's tests use the page as an operator would.
// Every uncaught page error is recorded; Check fails the test on any.
type Browser struct {
	t   *testing.T
	ctx context.Context
	// Shots is the directory screenshots go to (gitignored e2e/screenshots).
	Shots string
	*pageErrors
}

type pageErrors struct {
	mu     sync.Mutex
	errors []string
}

// In returns the browser for subtest t (the same tab; failures go to t).
func (b *Browser) In(t *testing.T) *Browser {
	c := *b
	c.t = t
	return &c
}

// chromiumPath finds Debian's Chromium. Missing, the browser tests skip
// with a message locally; in CI (CI=true) they fail: .ci/run installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "Chromium is not installed (apt-get install -y chromium): the console's browser tests need it"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; skipped")
	return ""
}

// NewBrowser starts Chromium with a fresh profile (stopped when the test
// ends) at width x height, in time zone tz.
func NewBrowser(t *testing.T, width, height int, tz string) *Browser {
	t.Helper()
	exe := chromiumPath(t)
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.WindowSize(width, height),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{t: t, Shots: filepath.Join(root, "e2e", "screenshots"), pageErrors: &pageErrors{}}
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			text := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil && e.ExceptionDetails.Exception.Description != "" {
				text = e.ExceptionDetails.Exception.Description
			}
			b.mu.Lock()
			b.errors = append(b.errors, text)
			b.mu.Unlock()
		}
	}))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b.ctx = ctx
	if err := os.MkdirAll(b.Shots, 0o755); err != nil {
		t.Fatal(err)
	}
	// The first run starts the browser, which lives as long as its context:
	// b.ctx itself, never one with a timeout.
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: tz})
		return err
	}), chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

// Do runs actions, failing the test on an error.
func (b *Browser) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail("%v", err)
	}
}

// Eval evaluates a JavaScript expression in the page (DevTools evaluation:
// not subject to the page's CSP).
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail("evaluate %s: %v", expr, err)
	}
	return v
}

// Wait polls expr in the page until it is truthy (20 s at most); what says
// what is awaited.
func (b *Browser) Wait(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, time.Until(deadline)+5*time.Second)
		_, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(time.Until(deadline))))
		cancel()
		if err == nil {
			return
		}
		// A navigation (a sign-out reloads the page) replaced the document
		// the poll ran in: poll the new one until the deadline.
		if navigated(err) && time.Now().Before(deadline) {
			continue
		}
		b.fail("waiting for %s (%s): %v", what, expr, err)
		return
	}
}

// navigated reports a DevTools error of an expression whose document went
// away under it.
func navigated(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Cannot find context with specified id") || strings.Contains(s, "Execution context was destroyed") ||
		strings.Contains(s, "Inspected target navigated or closed")
}

// Click clicks (a real mouse click) the first element of a CSS selector.
func (b *Browser) Click(css string) {
	b.t.Helper()
	b.Do(chromedp.Click(chromedp.CSS(css)))
}

// Hold makes the page's first n requests whose URL matches pattern (a
// DevTools pattern: * for anything) go unanswered, as a worker that hangs
// would; later ones go through. The returned stop ends the interception
// and says how many matching requests the page sent.
func (b *Browser) Hold(pattern string, n int) (stop func() int) {
	b.t.Helper()
	paused := make(chan fetch.RequestID, 64)
	ctx, cancel := context.WithCancel(b.ctx)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e.RequestID
		}
	}); err != nil {
		b.fail("listen: %v", err)
	}
	seen := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case id := <-paused:
				if seen++; seen > n {
					_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	if _, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: pattern}}}); err != nil {
		b.fail("intercept %s: %v", pattern, err)
	}
	return func() int {
		_, _ = chromedp.Call(b.ctx, fetch.Disable, cdp.Empty{})
		cancel()
		<-done
		return seen
	}
}

// ClickText clicks the first visible element of tag whose text is text.
func (b *Browser) ClickText(tag, text string) {
	b.t.Helper()
	b.Do(chromedp.Click(chromedp.JSPath(fmt.Sprintf(`[...document.querySelectorAll(%q)].filter(e => e.textContent.trim() === %q)`, tag, text))))
}

// Type types text into the element of a CSS selector (key by key).
func (b *Browser) Type(css, text string) {
	b.t.Helper()
	b.Do(chromedp.SendKeys(chromedp.CSS(css), text))
}

// Clear empties an input as deleting its text does (an input event).
func (b *Browser) Clear(css string) {
	b.t.Helper()
	Eval[bool](b, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = '';
		e.dispatchEvent(new Event('input', {bubbles: true})); return true })()`, css))
}

// Select sets a <select>'s value as a person choosing an option does.
func (b *Browser) Select(css, value string) {
	b.t.Helper()
	Eval[bool](b, fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q;
		s.dispatchEvent(new Event('change', {bubbles: true})); return true })()`, css, value))
}

// Text is the rendered text of the page's body.
func (b *Browser) Text() string {
	b.t.Helper()
	return Eval[string](b, `document.body.innerText`)
}

// Shot saves a screenshot of the whole page as e2e/screenshots/<name>.png
// and returns its path.
func (b *Browser) Shot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.fail("screenshot: %v", err)
	}
	p := filepath.Join(b.Shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return p
}

// Check fails the test if the page threw anything so far.
func (b *Browser) Check() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errors) > 0 {
		b.t.Fatalf("the page threw:\n%s", strings.Join(b.errors, "\n"))
	}
}

func (b *Browser) fail(format string, args ...any) {
	b.t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name()) + "-failure"
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		_ = os.WriteFile(filepath.Join(b.Shots, name+".png"), png, 0o644)
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	b.t.Fatalf(format+"\n--- page text ---\n%.3000s", append(args, text)...)
}
