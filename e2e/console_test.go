//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// The operator console in headless Chromium against the built
// worker under wrangler dev: Workers Static Assets serve the page, the Go
// worker the API. The worker is the console's own, so that the counts the
// page shows are the test's. Every step saves a screenshot under
// e2e/screenshots (gitignored); CONSOLE_DOCS_SCREENSHOT=1 also writes the
// docs/console.png (shown by README.md and docs/console.md).

// demoBeers and demoReasons make the overview look like a real incident.
var demoBeers = [][2]string{{"Hop Stoopid", "Lagunitas"}, {"Pliny the Elder", "Russian River"}, {"Heady Topper", "The Alchemist"},
	{"Two Hearted Ale", "Bell's"}, {"Pale Ale", "Sierra Nevada"}, {"Zombie Dust", "3 Floyds"}, {"Focal Banger", "The Alchemist"},
	{"Julius", "Tree House"}, {"Westvleteren 12", "Sint-Sixtus"}, {"Bourbon County Stout", "Goose Island"}}

var demoReasons = []string{"transient: provider returned 503 Service Unavailable", "transient: provider call timed out after 15000 ms",
	"transient: provider returned 503 Service Unavailable", "rate_limited: provider returned 429 (Retry-After 30)",
	"permanent: provider returned 400 Bad Request", "transient: provider returned 503 Service Unavailable"}

// demoSQL is one INSERT of n rows spread over the last 7 days (more in the
// last day and in an incident two days ago); older rows are partly
// replayed or acknowledged.
func demoSQL(n int, now time.Time) string {
	r := rand.New(rand.NewPCG(17, 17))
	hour := time.Hour.Milliseconds()
	var vals []string
	for i := 0; i < n; i++ {
		var ago int64
		switch p := r.Float64(); {
		case p < 0.35:
			ago = r.Int64N(24 * hour)
		case p < 0.65:
			ago = 46*hour + r.Int64N(5*hour)
		default:
			ago = r.Int64N(7 * 24 * hour)
		}
		at := now.UnixMilli() - ago
		beer := demoBeers[r.IntN(len(demoBeers))]
		reason := demoReasons[r.IntN(len(demoReasons))]
		status, ack, replayed := "pending", "NULL", "NULL"
		if ago > 3*24*hour {
			switch p := r.Float64(); {
			case p < 0.4:
				status, ack = "acknowledged", fmt.Sprint(at+hour)
			case p < 0.6:
				status, replayed = "replayed", fmt.Sprint(at+hour)
			}
		}
		id := fmt.Sprintf("%d", 7239000+i)
		body, _ := json.Marshal(map[string]string{"beer_id": id, "beer_name": beer[0], "brewer": beer[1]})
		vals = append(vals, fmt.Sprintf(`('demo-%d', '%s', %s, %s, %d, 4, %s, %s, 'beer-enrichment', '%s', %s, %s, %s, 'demo-%d', %d, %d, 'json')`,
			i, id, sqlString(beer[0]), sqlString(beer[1]), at, sqlString(reason), sqlString(strings.SplitN(reason, ":", 2)[0]), status,
			replayed, ack, sqlString(string(body)), i, at, at))
	}
	return `INSERT INTO dlq_messages(message_id, row_key, label_1, label_2, failed_at, failure_count, failure_reason, failure_class,
		source_queue, status, replayed_at, acknowledged_at, raw_message, last_message_id, first_failed_at, updated_at, content_type) VALUES ` +
		strings.Join(vals, ",\n")
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ownRows inserts n pending rows of a test: beer names <prefix>-<i>, the
// given reason, failed_at now-i s with pairs of ties (cursor paging must
// tell them apart by id).
func ownRows(prefix, reason string, n int, now time.Time) string {
	var vals []string
	for i := 0; i < n; i++ {
		at := now.UnixMilli() - int64(i/2)*1000
		body, _ := json.Marshal(map[string]string{"beer_id": fmt.Sprintf("%s-b%d", prefix, i), "beer_name": fmt.Sprintf("%s-%02d", prefix, i)})
		vals = append(vals, fmt.Sprintf(`('%[1]s-m%[2]d', '%[1]s-b%[2]d', '%[1]s-%02[2]d', 'E2E Brewing', %[3]d, 4, %[4]s, 'transient',
			'beer-enrichment', %[5]s, '%[1]s-m%[2]d', %[3]d, %[3]d, 'json')`, prefix, i, at, sqlString(reason), sqlString(string(body))))
	}
	return `INSERT INTO dlq_messages(message_id, row_key, label_1, label_2, failed_at, failure_count, failure_reason, failure_class,
		source_queue, raw_message, last_message_id, first_failed_at, updated_at, content_type) VALUES ` + strings.Join(vals, ",\n")
}

const hostileName = `<img src=x onerror="window.__pwned=1">`
const hostileReason = `permanent: <script>window.__pwned=2</script><img src=x onerror="window.__pwned=3">`

func TestConsole(t *testing.T) {
	chromiumPath(t)
	w := startWorkerWith(t, Options{Vars: map[string]string{"ALERT_PENDING_THRESHOLD": "50"}})
	now := time.Now()
	w.ExecDirect(t, demoSQL(160, now))
	// Jobs and alerts have run once (two alerts fire: more than 50 pending, oldest over 24 h).
	w.FireCron(t, "*/5 * * * *", now)
	w.FireCron(t, "17 3 * * *", now)

	browser := NewBrowser(t, 1280, 900, "America/New_York")

	t.Run("security headers", func(t *testing.T) {
		for _, p := range []string{"/", "/console.js"} {
			resp, err := http.Get(w.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			csp := resp.Header.Get("Content-Security-Policy")
			for _, d := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
				"frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'", "require-trusted-types-for 'script'"} {
				if !strings.Contains(csp, d) {
					t.Errorf("%s: CSP %q lacks %q", p, csp, d)
				}
			}
			if strings.Contains(csp, "unsafe") {
				t.Errorf("%s: CSP allows %q", p, csp)
			}
			if resp.StatusCode != 200 || resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("%s: %d nosniff=%q referrer=%q", p, resp.StatusCode, resp.Header.Get("X-Content-Type-Options"), resp.Header.Get("Referrer-Policy"))
			}
		}
		// The API still answers from the worker, with its envelopes.
		if r := w.Admin(t, http.MethodGet, "/admin/alerts", nil); r.Status != 200 || !r.Success || r.Header.Get("X-Request-ID") == "" {
			t.Errorf("/admin/alerts: %d %s", r.Status, r.Raw)
		}
		if r, err := w.Do(http.MethodGet, "/nope", nil, nil); err != nil || r.Status != 404 || r.Error == nil || r.Error.Code != "NOT_FOUND" {
			t.Errorf("/nope: %v %+v", err, r)
		}
		// The page has no inline script or style: nothing the CSP would need to allow.
		resp, err := http.Get(w.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if s := string(page); strings.Contains(s, "<style") || strings.Contains(s, "style=") || strings.Contains(s, "<script>") || strings.Contains(s, "onload=") {
			t.Errorf("inline script or style in index.html:\n%s", s)
		}
	})

	t.Run("sign in", func(t *testing.T) {
		b := browser.In(t)
		start := time.Now()
		b.Do(chromedp.Navigate(w.URL + "/"))
		b.Wait("sign-in form", `document.querySelector('input[name=api-key]')`)
		t.Logf("first load (cold profile) to the sign-in form: %s", time.Since(start).Round(time.Millisecond))
		b.Shot("signin")
		// Wrong key, then wrong secret: each says so, and nothing is kept.
		b.Type("input[name=api-key]", "wrong-key")
		b.Type("input[name=admin-secret]", TestAdminSecret+"\r")
		b.Wait("wrong key message", `document.querySelector('#signin-error')?.textContent.includes('API key is wrong')`)
		b.Shot("signin-wrong-key")
		b.Clear("input[name=api-key]")
		b.Clear("input[name=admin-secret]")
		b.Type("input[name=api-key]", TestAPIKey)
		b.Type("input[name=admin-secret]", "wrong-secret\r")
		b.Wait("wrong secret message", `document.querySelector('#signin-error')?.textContent.includes('admin secret is wrong')`)
		if n := Eval[float64](b, `sessionStorage.length`); n != 0 {
			t.Errorf("%v items in sessionStorage after a refused sign-in", n)
		}
		b.Clear("input[name=admin-secret]")
		b.Type("input[name=admin-secret]", TestAdminSecret+"\r") // Enter submits: the keyboard is enough
		b.Wait("overview", `document.querySelector('h1')?.textContent === 'Overview' && document.querySelector('.card-value')`)
		// The credentials are in sessionStorage and nowhere else a page keeps things.
		if got := Eval[string](b, `sessionStorage.getItem('redrive.apiKey') + ' ' + document.cookie + ' ' + location.href + ' ' + localStorage.length`); got != TestAPIKey+"  "+w.URL+"/ 0" {
			t.Errorf("storage: %q", got)
		}
		b.Check()
	})

	t.Run("breaker reset", func(t *testing.T) {
		b := browser.In(t)
		w.ExecDirect(t, fmt.Sprintf(`INSERT INTO enrichment_breaker(name, state, previous_state, failures, open_until, cause, updated_at)
			VALUES ('provider', 'open', 'closed', 0, %d, 'auth', %d)`, time.Now().Add(time.Hour).UnixMilli(), time.Now().UnixMilli()))
		b.Do(chromedp.Navigate("about:blank"))
		b.Do(chromedp.Navigate(w.URL + "/"))
		b.Wait("breaker section", `document.querySelector('#h-breaker') && document.querySelector('.card-value')`)
		b.ClickText("button", "Close the breaker…")
		b.Wait("confirmation", `document.querySelector('[role=alertdialog]')?.textContent.includes('Close the provider')`)
		if n := w.Int(t, `SELECT COUNT(*) FROM enrichment_breaker WHERE state = 'open'`); n != 1 {
			t.Fatal("the breaker closed before the confirmation")
		}
		b.ClickText("button", "Yes, close it")
		b.Wait("result", `document.querySelector('[role=status]')?.textContent.includes('Breaker closed (it was open)')`)
		b.Shot("breaker-reset")
		if n := w.Int(t, `SELECT COUNT(*) FROM enrichment_breaker WHERE state = 'closed' AND cause IS NULL`); n != 1 {
			t.Fatal("breaker not closed")
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE action = 'breaker_reset' AND outcome = 'ok'`); n != 1 {
			t.Fatalf("%d audited resets", n)
		}
		b.Check()
	})

	t.Run("overview", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate("about:blank"))
		start := time.Now()
		b.Do(chromedp.Navigate(w.URL + "/"))
		// The charts draw (uPlot loads) when they near the screen: scroll to them.
		b.Wait("overview with data", `document.querySelectorAll('.card-value').length === 6 && (document.querySelector('.charts').scrollIntoView(), document.querySelectorAll('.chart canvas').length === 2) && document.querySelector('table tbody th')`)
		load := time.Since(start)
		timing := Eval[string](b, `(() => { const n = performance.getEntriesByType('navigation')[0];
			const r = performance.getEntriesByType('resource');
			return JSON.stringify({dom_content_loaded_ms: Math.round(n.domContentLoadedEventEnd), load_ms: Math.round(n.loadEventEnd),
				api_calls: r.filter(e => e.name.includes('/admin/')).length,
				console_bytes: r.filter(e => !e.name.includes('/admin/')).reduce((s, e) => s + e.encodedBodySize, 0) + n.encodedBodySize}) })()`)
		t.Logf("overview load (signed in, warm profile) to data on screen: %s; navigation timing %s", load.Round(time.Millisecond), timing)
		os.WriteFile(filepath.Join(b.Shots, "timing.txt"), []byte(fmt.Sprintf("overview to data on screen: %s\n%s\n", load.Round(time.Millisecond), timing)), 0o644)

		pending := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`)
		text := b.Text()
		for _, want := range []string{fmt.Sprintf("%d\nPending", pending), "dlq_pending_high", "dlq_oldest_pending", "dlq_rescue", "dlq_retention",
			"Last 24 hours, by hour", "Last 7 days, by day", "Top failure reasons", "transient: provider returned 503 Service Unavailable",
			"The Alchemist", "beer-enrichment"} {
			if !strings.Contains(text, want) {
				t.Errorf("overview lacks %q", want)
			}
		}
		// The charts' numbers (from the hourly buckets) add up to the rows that failed in the window.
		week := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE failed_at >= ?`, now.Add(-6*24*time.Hour).UnixMilli())
		if got := Eval[float64](b, `[...document.querySelectorAll('.chart')][1].querySelectorAll('tbody td.num').length`); got != 7 {
			t.Errorf("7-day chart has %v days", got)
		}
		if got := Eval[float64](b, `+[...document.querySelectorAll('.chart figcaption strong')][1].textContent`); int64(got) < week {
			t.Errorf("7-day chart shows %v failures, at least %d rows failed in the last 6 days", got, week)
		}
		// Times are the viewer's (New York) with UTC in the title; the switch shows UTC.
		if title := Eval[string](b, `document.querySelector('time').title`); !strings.Contains(title, "UTC") {
			t.Errorf("time title %q", title)
		}
		p := b.Shot("overview-1280")
		if os.Getenv("CONSOLE_DOCS_SCREENSHOT") != "" {
			root, _ := sqlitetest.Root()
			png, _ := os.ReadFile(p)
			os.MkdirAll(filepath.Join(root, "docs"), 0o755)
			if err := os.WriteFile(filepath.Join(root, "docs", "console.png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b.Click("header .utc input")
		b.Wait("UTC times", `document.querySelector('main time').textContent.includes('UTC')`)
		b.Click("header .utc input")

		// 390 px wide: nothing wider than the screen but the tables' own scroll areas.
		b.Do(chromedp.EmulateViewport(390, 844))
		b.Wait("narrow layout", `getComputedStyle(document.querySelector('.charts')).gridTemplateColumns.split(' ').length === 1`)
		b.Wait("nothing wider than 390 px (the charts redraw to the new width)",
			`document.documentElement.scrollWidth <= 390 && [...document.querySelectorAll('.chart canvas')].every(c => c.getBoundingClientRect().right <= 390)`)
		b.Shot("overview-390")
		b.Do(chromedp.EmulateViewport(1280, 900))
		b.Check()
	})

	// The tests' own rows, after the overview's screenshot (which shows the demo incident only).
	prefix := newPrefix("con")
	paging, bulk, ack := prefix+"pg", prefix+"bulk", prefix+"ack"
	w.ExecDirect(t, ownRows(paging, "transient: provider returned 502 for "+paging, 23, now.Add(-3*time.Hour)))
	w.ExecDirect(t, ownRows(bulk, "transient: provider returned 504 for "+bulk, 7, now.Add(-2*time.Hour)))
	w.ExecDirect(t, ownRows(ack, "permanent: duplicate of "+ack, 3, now.Add(-time.Hour)))
	// Hostile text: one row captured by the real DLQ consumer (its body and
	// beer name), one stored with a hostile failure reason and text body.
	hostileBody, _ := json.Marshal(map[string]string{"beer_id": prefix + "-evil", "beer_name": hostileName, "brewer": "<script>window.__pwned=4</script>"})
	r := w.Admin(t, http.MethodPost, "/__dev/send", map[string]any{"queue": "beer-enrichment-dlq",
		"messages": []map[string]any{{"body": string(hostileBody), "content_type": "json"}}})
	if r.Status != http.StatusOK {
		t.Fatalf("send: %d %s", r.Status, r.Raw)
	}
	w.ExecDirect(t, fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, label_1, label_2, failed_at, failure_reason, raw_message,
		last_message_id, first_failed_at, updated_at, content_type) VALUES ('%[1]s-evil2', '%[1]s-evil2', %[2]s, 'E2E', %[3]d, %[4]s, %[5]s,
		'%[1]s-evil2', %[3]d, %[3]d, 'text')`, prefix, sqlString(hostileName), now.UnixMilli(), sqlString(hostileReason),
		sqlString(`text body <script>window.__pwned=5</script>`+hostileName)))
	Eventually(t, 30*time.Second, "hostile message captured", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, prefix+"-evil") == 1
	})
	t.Run("filter and page through every row once", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/failures"))
		b.Wait("failures list", `document.querySelector('table.rows tbody tr td')`)
		b.Select("select[name=limit]", "10")
		b.Type("input[name=q]", paging) // debounced: one list call once typing pauses
		b.Wait("23 matching", `document.querySelector('.toolbar .count').textContent.startsWith('23 matching')`)
		if !strings.Contains(Eval[string](b, `location.hash`), "q="+paging) {
			t.Errorf("the search is not in the address: %s", Eval[string](b, `location.hash`))
		}
		var seen []string
		for page := 1; ; page++ {
			b.Wait(fmt.Sprintf("page %d", page), fmt.Sprintf(`document.querySelector('.pager span').textContent === 'Page %d' && document.querySelector('table.rows').getAttribute('aria-busy') === 'false'`, page))
			ids := Eval[[]string](b, `[...document.querySelectorAll('table.rows tbody tr')].map(tr => tr.querySelector('.beer-name').textContent)`)
			seen = append(seen, ids...)
			if page == 1 {
				b.Shot("failures-page1")
			}
			if Eval[bool](b, `[...document.querySelectorAll('.pager button')].find(x => x.textContent === 'Next page').disabled`) {
				break
			}
			b.ClickText("button", "Next page")
			if page > 5 {
				t.Fatal("more than 5 pages of 10 for 23 rows")
			}
		}
		want := make([]string, 23)
		for i := range want {
			want[i] = fmt.Sprintf("%s-%02d", paging, i)
		}
		got := slices.Clone(seen)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("paged through %d rows %v, want each of the 23 once", len(seen), seen)
		}
		// Status and time range filters reach the API too.
		b.Select("select[name=status]", "acknowledged")
		b.Wait("none acknowledged", `document.querySelector('.toolbar .count').textContent.startsWith('0 matching')`)
		b.Select("select[name=status]", "pending")
		b.Wait("23 again", `document.querySelector('.toolbar .count').textContent.startsWith('23 matching')`)
		before := now.Add(-3 * time.Hour).Add(-5500 * time.Millisecond) // rows 12..22 failed 6 s or more before the first
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + paging + "&limit=10&failed_before=" + fmt.Sprint(before.UnixMilli())))
		b.Wait("time range", `document.querySelector('.toolbar .count').textContent.startsWith('11 matching')`)
		b.Check()
	})

	t.Run("detail", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + paging))
		b.Wait("rows", `document.querySelectorAll('table.rows tbody tr').length === 23`)
		b.Do(chromedp.Click(chromedp.JSPath(fmt.Sprintf(`[...document.querySelectorAll('table.rows tbody tr')].filter(tr => tr.querySelector('.beer-name').textContent === %q).map(tr => tr.querySelector('td:nth-child(2) a'))`, paging+"-00"))))
		b.Wait("detail", `document.querySelector('h1').textContent.startsWith('Failure #') && document.querySelector('pre.payload')`)
		payload := Eval[string](b, `document.querySelector('pre.payload').textContent`)
		if !strings.Contains(payload, "{\n  \"beer_id\": \""+paging+"-b0\",\n  \"beer_name\": \""+paging+"-00\"\n}") {
			t.Errorf("payload not pretty-printed: %q", payload)
		}
		text := b.Text()
		for _, want := range []string{"transient: provider returned 502 for " + paging, "Replayed 0 times", paging + "-m0", "Audit entries", "Copy payload", "beer-enrichment"} {
			if !strings.Contains(text, want) {
				t.Errorf("detail lacks %q", want)
			}
		}
		b.Shot("detail")
		b.Check()
	})

	t.Run("a read that hangs is asked again, then shown as an error", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/audit"))
		b.Wait("audit page", `document.querySelector('h1').textContent === 'Audit log'`)
		// The first answer never comes: the second asking loads the page.
		stop := b.Hold("*/admin/alerts*", 1)
		b.Do(chromedp.Navigate(w.URL + "/#/"))
		b.Wait("overview after one silence", `document.querySelectorAll('.card-value').length === 6`)
		if n := stop(); n != 2 {
			t.Errorf("GET /admin/alerts was sent %d times, want 2 (once more after the silence)", n)
		}
		// Two silences: an error, not "Loading…" for ever; the next tick loads.
		b.Do(chromedp.Navigate(w.URL + "/#/audit"))
		b.Wait("audit page", `document.querySelector('h1').textContent === 'Audit log'`)
		stop = b.Hold("*/admin/alerts*", 2)
		b.Do(chromedp.Navigate(w.URL + "/#/"))
		b.Wait("timeout shown", `document.querySelector('p.error[role=alert]')?.textContent.startsWith('TIMEOUT: The worker did not answer')`)
		b.Wait("overview at the next tick", `document.querySelectorAll('.card-value').length === 6`)
		if n := stop(); n != 3 {
			t.Errorf("GET /admin/alerts was sent %d times, want 3", n)
		}
		b.Check()
	})

	t.Run("dry run then bulk replay a filter", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/"))
		b.Wait("overview", `document.querySelectorAll('.card-value').length === 6`)
		replayedBefore := Eval[string](b, `document.querySelectorAll('.card-value')[2].textContent`)
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + bulk))
		b.Wait("7 matching", `document.querySelector('.toolbar .count').textContent.startsWith('7 matching')`)
		b.ClickText("button", "Replay all matching")
		b.Wait("dry run", `document.querySelector('dialog .preview-count')`)
		if got := Eval[string](b, `document.querySelector('dialog .preview-count').textContent`); !strings.Contains(got, "7 pending rows would be replayed") {
			t.Errorf("dry run says %q", got)
		}
		if got := Eval[string](b, `document.querySelector('dialog').innerText`); !strings.Contains(got, "transient: provider returned 504 for "+bulk+"\t7") {
			t.Errorf("dry run reasons: %q", got)
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE label_1 LIKE ? AND status = 'pending'`, bulk+"-%"); n != 7 {
			t.Fatalf("the dry run changed rows: %d pending", n)
		}
		b.Shot("replay-dry-run")
		b.ClickText("dialog button", "Replay 7 rows")
		b.Wait("result", `document.querySelector('dialog .result')?.textContent.includes('Replayed 7')`)
		b.Shot("replay-result")
		b.ClickText("dialog button", "Close")
		b.Wait("list updated", `document.querySelector('.toolbar .count').textContent.startsWith('0 matching')`)
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE label_1 LIKE ? AND status = 'replayed' AND replay_count = 1`, bulk+"-%"); n != 7 {
			t.Errorf("%d rows replayed, want 7", n)
		}
		b.Do(chromedp.Navigate(w.URL + "/#/"))
		b.Wait("overview", `document.querySelectorAll('.card-value').length === 6`)
		var before int
		fmt.Sscan(replayedBefore, &before)
		b.Wait("replayed count up by 7", fmt.Sprintf(`+document.querySelectorAll('.card-value')[2].textContent === %d`, before+7))
		b.Check()
	})

	t.Run("acknowledge with a note, then find it in the audit log", func(t *testing.T) {
		b := browser.In(t)
		note := "duplicates of " + ack + " (e2e)"
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + ack))
		b.Wait("3 matching", `document.querySelector('.toolbar .count').textContent.startsWith('3 matching') && document.querySelectorAll('table.rows tbody tr').length === 3`)
		b.Click("table.rows tbody tr:nth-child(1) input[type=checkbox]")
		b.Click("table.rows tbody tr:nth-child(2) input[type=checkbox]")
		b.Wait("2 selected", `document.querySelector('.toolbar .count').textContent.includes('2 selected')`)
		ids := Eval[[]string](b, `[...document.querySelectorAll('table.rows tbody tr.selected td:nth-child(2)')].map(td => td.textContent)`)
		b.ClickText("button", "Acknowledge selected")
		b.Wait("dry run", `document.querySelector('dialog .preview-count')?.textContent.includes('2 pending rows would be acknowledged')`)
		b.Type("dialog textarea", note)
		b.Shot("acknowledge-dry-run")
		b.ClickText("dialog button", "Acknowledge 2 rows")
		b.Wait("result", `document.querySelector('dialog .result')?.textContent.includes('Acknowledged 2')`)
		b.ClickText("dialog button", "Close")
		b.Wait("1 left", `document.querySelector('.toolbar .count').textContent.startsWith('1 matching')`)
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE label_1 LIKE ? AND status = 'acknowledged' AND acknowledged_note = ?`, ack+"-%", note); n != 2 {
			t.Errorf("%d rows acknowledged with the note, want 2", n)
		}
		b.Do(chromedp.Navigate(w.URL + "/#/audit?action=acknowledge"))
		b.Wait("audit entry", fmt.Sprintf(`document.querySelector('table.audit tbody tr')?.textContent.includes(%q)`, note))
		row := Eval[string](b, `document.querySelector('table.audit tbody tr').innerText`)
		for _, want := range append([]string{"acknowledge", "ok", "acknowledged 2", handlersKeyFingerprint()}, ids...) {
			if !strings.Contains(row, want) {
				t.Errorf("audit row %q lacks %q", row, want)
			}
		}
		b.Shot("audit")
		// The row's detail lists the same entry.
		b.Do(chromedp.Navigate(w.URL + "/#/failures/" + ids[0]))
		b.Wait("detail audit", fmt.Sprintf(`document.querySelector('table.audit')?.textContent.includes(%q)`, note))
		b.Check()
	})

	t.Run("hostile text stays text", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + "onerror"))
		b.Wait("hostile rows", `document.querySelectorAll('table.rows tbody tr').length >= 2`)
		text := b.Text()
		for _, want := range []string{hostileName, hostileReason} {
			if !strings.Contains(text, want) {
				t.Errorf("the list does not show %q literally", want)
			}
		}
		b.Shot("hostile-list")
		for _, beer := range []string{prefix + "-evil", prefix + "-evil2"} {
			id := w.Int(t, `SELECT id FROM dlq_messages WHERE row_key = ?`, beer)
			b.Do(chromedp.Navigate(fmt.Sprintf("%s/#/failures/%d", w.URL, id)))
			b.Wait("hostile detail", `document.querySelector('pre.payload')`)
			text := b.Text()
			if !strings.Contains(text, hostileName) || !strings.Contains(text, "<script>window.__pwned=") {
				t.Errorf("row %d: hostile text not shown literally:\n%.2000s", id, text)
			}
			b.Shot("hostile-detail-" + beer[len(prefix)+1:])
		}
		// Nothing ran and nothing became markup: the flag the payloads set is
		// unset, and the page holds no <img> or extra <script> at all.
		if got := Eval[string](b, `String(window.__pwned) + ' ' + document.querySelectorAll('img').length + ' ' + document.querySelectorAll('script').length`); got != "undefined 0 1" {
			t.Errorf("pwned, images, scripts = %q, want undefined 0 1", got)
		}
		b.Check()
	})

	t.Run("wrong credentials later sign the tab out", func(t *testing.T) {
		b := browser.In(t)
		Eval[bool](b, `(sessionStorage.setItem('redrive.adminSecret', 'changed'), true)`)
		b.Do(chromedp.Navigate(w.URL + "/#/audit"))
		b.Wait("sign-in again", `document.querySelector('#signin-error')?.textContent.includes('admin secret is wrong')`)
		if got := Eval[string](b, `String(sessionStorage.getItem('redrive.apiKey')) + String(sessionStorage.getItem('redrive.adminSecret'))`); got != "nullnull" {
			t.Errorf("credentials left in sessionStorage: %q", got)
		}
		b.Check()
	})
}

// handlersKeyFingerprint is the audit log's fingerprint of TestAPIKey.
func handlersKeyFingerprint() string {
	return handlers.Auth{APIKey: TestAPIKey, AdminSecret: TestAdminSecret}.KeyFingerprint(TestAPIKey)
}
