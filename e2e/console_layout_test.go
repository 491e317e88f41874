//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/enrichment"
)

// TestConsoleLayoutAndAxe: every page and dialog of the console
// at 1280×800 and 390×844 fits its window (no page scrolls sideways, no
// table is wider than its box, no cell clipped, no time broken over lines;
// below 600 px tables are stacked cards) and has no axe-core violation of
// any impact; the page records no CSP violation, axe's injection included.
// On the way, replay tasks are started from a filter and from a failure
// group (dry run first; rate, delay, destination, canary), and the replay
// dialog warns of permanent failures.
func TestConsoleLayoutAndAxe(t *testing.T) {
	chromiumPath(t)
	w := startWorker(t, map[string]string{"ALERT_PENDING_THRESHOLD": "20"})
	now := time.Now()
	w.ExecDirect(t, demoSQL(60, now))
	// Poison straight onto the DLQ: two groups of JSON bodies the consumer
	// cannot use (replayable, but they fail again).
	var msgs []map[string]any
	for i := 0; i < 12; i++ {
		body := fmt.Sprintf(`{"beer_id":%d}`, i)
		if i%2 == 1 {
			body = fmt.Sprintf(`{"beer_name":"No id %d"}`, i)
		}
		msgs = append(msgs, map[string]any{"body": body, "content_type": "json"})
	}
	if r := w.Admin(t, http.MethodPost, "/__dev/send", map[string]any{"queue": "beer-enrichment-dlq", "messages": msgs}); r.Status != http.StatusOK {
		t.Fatalf("send: %d %s", r.Status, r.Raw)
	}
	// A beer failing every attempt (500): a row with an attempt history.
	token := uniq("console-layout")
	w.Provider.On(token, Behavior{Status: 500, Body: `{"error":{"message":"upstream busy"}}`})
	beer := enrichment.Beer{BeerID: "id-" + token, BeerName: "Hop Stoopid " + token, Brewer: "Lagunitas"}
	enrich(t, w, beer)
	var detail int64
	Eventually(t, 2*time.Minute, "the poison and the failing beer captured", func() bool {
		detail = w.Int(t, `SELECT COALESCE(MAX(id), 0) FROM dlq_messages WHERE row_key = ?`, beer.BeerID)
		return detail > 0 && w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE failure_class = 'poison'`) == 12
	})
	w.FireCron(t, "*/5 * * * *", now)
	w.FireCron(t, "17 3 * * *", now)
	// The audit log with long filters and notes, and a task on the tasks page.
	long := strings.Repeat("a long note that an operator wrote to explain why ", 4)
	var ackIDs []int64
	rows, err := w.DB(t).Query(`SELECT id FROM dlq_messages WHERE label_2 = 'Goose Island' AND status = 'pending' LIMIT 3`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ackIDs = append(ackIDs, id)
	}
	rows.Close()
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": ackIDs, "note": long}); r.Status != 200 {
		t.Fatalf("acknowledge: %d %s", r.Status, r.Raw)
	}
	// An audit entry that names the detail page's row (its audit section
	// then holds a table).
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": []int64{detail}, "dry_run": true}); r.Status != 200 {
		t.Fatalf("dry run of the detail row: %d %s", r.Status, r.Raw)
	}
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/replay", map[string]any{"dry_run": true,
		"filter": map[string]any{"q": "Sierra Nevada", "source_queue": "beer-enrichment", "failed_after": now.Add(-48 * time.Hour).UnixMilli()}}); r.Status != 200 {
		t.Fatalf("dry run: %d %s", r.Status, r.Raw)
	}
	// A search with no space to break at (a token from a log line).
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"dry_run": true,
		"filter": map[string]any{"q": "upstream_request_id=7f3c9a4e0b2d4c1f8e6a5b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1"}}); r.Status != 200 {
		t.Fatalf("dry run: %d %s", r.Status, r.Raw)
	}
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{"filter": map[string]any{"q": "Bell's"}, "rate_per_minute": 1}); r.Status != http.StatusAccepted {
		t.Fatalf("task: %d %s", r.Status, r.Raw)
	}
	lagunitas := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND label_2 = 'Lagunitas'`)

	browser := NewBrowser(t, 1280, 800, "America/New_York")
	browser.WatchCSP()
	// ready: the page has drawn (the overview's charts only once scrolled
	// near: uPlot loads then).
	pages := []struct{ name, hash, ready string }{
		{"overview", "#/", `document.querySelectorAll('.card-value').length === 6 && (document.querySelector('.charts').scrollIntoView(), document.querySelectorAll('.chart canvas').length === 2) && document.querySelector('.alerts li')`},
		{"failures", "#/failures?limit=50", `document.querySelectorAll('table.rows tbody tr').length === 50 && document.querySelector('.pager')`},
		{"groups", "#/groups", `document.querySelectorAll('table.groups tbody tr').length >= 2`},
		{"tasks", "#/tasks", `document.querySelector('tbody tr progress')`},
		{"audit", "#/audit", `document.querySelectorAll('table.audit tbody tr').length >= 3`},
		{"alerts", "#/alerts", `document.querySelector('.failed-count') && document.querySelectorAll('table.events tbody tr').length >= 1`},
		{"detail", fmt.Sprintf("#/failures/%d", detail), `document.querySelector('pre.payload') && document.querySelector('table.history tbody tr') && document.querySelector('table.audit tbody tr')`},
	}
	signIn := func(b *Browser) {
		b.Do(chromedp.Navigate(w.URL + "/"))
		Eval[bool](b, fmt.Sprintf(`(sessionStorage.setItem('redrive.apiKey', %q), sessionStorage.setItem('redrive.adminSecret', %q), true)`, TestAPIKey, TestAdminSecret))
		b.Do(chromedp.Navigate("about:blank")) // the page reads the credentials when it loads
	}
	// every page at the browser's size: it fits, and axe finds nothing.
	every := func(b *Browser, size string) {
		for _, p := range pages {
			b.Do(chromedp.Navigate(w.URL + "/" + p.hash))
			b.Wait(p.name, p.ready)
			b.Layout(p.name + " at " + size)
			b.Axe(p.name + " at " + size)
			b.Shot("layout-" + p.name + "-" + size)
		}
		b.CheckCSP(size)
		b.Check()
	}
	// dialog opens a dialog with a click on button (in the element of the
	// JS expression scope) and waits for ready inside it.
	dialog := func(b *Browser, scope, button, ready string) {
		Eval[bool](b, fmt.Sprintf(`([...%s.querySelectorAll('button')].find(x => x.textContent.trim() === %q).click(), true)`, scope, button))
		b.Wait(button+" dialog", `document.querySelector('dialog[open]') && (`+ready+`)`)
	}
	closeDialog := func(b *Browser) {
		b.ClickText("dialog[open] button", "Cancel")
		b.Wait("dialog closed", `!document.querySelector('dialog[open]')`)
	}
	group := func(text string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('table.groups tbody tr')].find(r => r.textContent.includes(%q))`, text)
	}

	t.Run("sign-in", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/"))
		b.Wait("sign-in form", `document.querySelector('input[name=api-key]')`)
		b.Layout("sign-in")
		b.Axe("sign-in")
		b.Do(chromedp.EmulateViewport(390, 844))
		b.Layout("sign-in at 390")
		b.Axe("sign-in at 390")
		b.Do(chromedp.EmulateViewport(1280, 800))
		b.CheckCSP("sign-in")
		b.Check()
	})

	t.Run("1280", func(t *testing.T) {
		b := browser.In(t)
		signIn(b)
		every(b, "1280")
		// The header's switch: the checkbox before its label, on one line.
		if got := Eval[string](b, `(() => { const l = document.querySelector('header .utc'), c = l.querySelector('input').getBoundingClientRect(), r = l.getBoundingClientRect();
			return (r.height <= 26) + ' ' + (c.left - r.left < 2 && c.right < r.right - 40) })()`); got != "true true" {
			t.Errorf("the UTC switch is not one line with its checkbox first (one line, checkbox first): %s", got)
		}
	})

	t.Run("overview text", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/"))
		b.Wait("alerts", `document.querySelector('.alerts li') && document.querySelector('.version-line')`)
		// Alert texts show their times as every other time on the page.
		alerts := Eval[string](b, `document.querySelector('.alerts').innerText`)
		if hasISO(alerts) {
			t.Errorf("an alert shows an ISO time: %s", alerts)
		}
		if n := Eval[float64](b, `document.querySelectorAll('.alerts li .muted time').length`); n < 1 {
			t.Errorf("no alert detail shows a <time>: %s", alerts)
		}
		// Nothing between the live version and its full stop.
		// The live backlog of the queue the worker sends to, read from the
		// runtime through the producer binding (Queues' metrics()).
		r := w.Admin(t, http.MethodGet, "/admin/queues", nil)
		var ql struct {
			Queues []struct {
				Queue        string `json:"queue"`
				Available    bool   `json:"available"`
				BacklogCount *int64 `json:"backlog_count"`
			} `json:"queues"`
		}
		r.Decode(t, &ql)
		found := false
		for _, q := range ql.Queues {
			if q.Queue == "beer-enrichment" {
				found = q.Available && q.BacklogCount != nil && *q.BacklogCount >= 0
			}
		}
		if r.Status != 200 || !found {
			t.Errorf("GET /admin/queues: %d %s", r.Status, r.Raw)
		}
		b.Wait("the backlog card", `[...document.querySelectorAll('#h-queues + .cards .card')].some(c => /^\d+\s*waiting in beer-enrichment/.test(c.innerText))`)
		if got := Eval[string](b, `getComputedStyle(document.querySelector('.version-line code.version')).marginRight`); got != "0px" {
			t.Errorf("a %s margin between the live version and the full stop after it", got)
		}
		b.Check()
	})

	t.Run("replay dialog warns of permanent failures", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/groups"))
		b.Wait("groups", group("beer_id is not a string"))
		dialog(b, group("beer_id is not a string"), "Replay", `document.querySelector('dialog[open] .preview-count')`)
		if got := Eval[string](b, `document.querySelector('dialog[open]').innerText`); !strings.Contains(got, "All 6 rows failed permanently: replaying them unchanged fails again") {
			t.Errorf("the replay dialog of a poison group does not warn:\n%s", got)
		}
		b.Layout("replay dialog at 1280")
		b.Axe("replay dialog at 1280")
		closeDialog(b)
		// Selected rows: the failures page knows their classes.
		b.Do(chromedp.Navigate(w.URL + "/#/failures?limit=50&q=no%20beer_id"))
		b.Wait("rows", `document.querySelectorAll('table.rows tbody tr').length === 6`)
		b.Click("table.rows tbody tr:nth-child(1) input[type=checkbox]")
		b.Click("table.rows tbody tr:nth-child(2) input[type=checkbox]")
		dialog(b, "document", "Replay selected", `document.querySelector('dialog[open] .preview-count')`)
		if got := Eval[string](b, `document.querySelector('dialog[open]').innerText`); !strings.Contains(got, "2 of the selected rows failed permanently") {
			t.Errorf("the replay dialog of 2 poison rows does not warn:\n%s", got)
		}
		b.Axe("replay selected dialog at 1280")
		closeDialog(b)
		// The edit dialog of a row's detail.
		b.Do(chromedp.Navigate(fmt.Sprintf("%s/#/failures/%d", w.URL, detail)))
		b.Wait("detail", `document.querySelector('pre.payload')`)
		dialog(b, "document", "Edit and replay", `document.querySelector('dialog[open] textarea')`)
		b.Layout("edit dialog at 1280")
		b.Axe("edit dialog at 1280")
		closeDialog(b)
		// Transient rows: no warning.
		b.Do(chromedp.Navigate(w.URL + "/#/failures?limit=50&q=Lagunitas"))
		b.Wait("rows", `document.querySelector('table.rows tbody tr td:nth-child(2) a')`)
		dialog(b, "document", "Acknowledge all matching", `document.querySelector('dialog[open] .preview-count')`)
		b.Axe("acknowledge dialog at 1280")
		closeDialog(b)
		b.Check()
	})

	t.Run("replay task from a filter", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=Lagunitas"))
		b.Wait("rows", fmt.Sprintf(`document.querySelector('.toolbar .count').textContent.startsWith('%d matching')`, lagunitas))
		dialog(b, "document", "Replay task…", `document.querySelector('dialog[open] .preview-count')`)
		if got := Eval[string](b, `document.querySelector('dialog[open] .preview-count').textContent`); !strings.Contains(got, fmt.Sprintf("Dry run: %d pending rows would be replayed now", lagunitas)) {
			t.Errorf("the task's dry run says %q, want %d rows", got, lagunitas)
		}
		b.Click("dialog[open] input[name=canary]")
		b.Wait("canary fields", `document.querySelector('dialog[open] input[name=canary_size]')`)
		b.Layout("task dialog at 1280")
		b.Axe("task dialog at 1280")
		b.Shot("task-dialog")
		// A destination the worker cannot send to: the API's error, no task.
		tasks := w.Int(t, `SELECT COUNT(*) FROM replay_tasks`)
		b.Clear("dialog[open] input[name=rate]")
		b.Type("dialog[open] input[name=rate]", "120")
		b.Clear("dialog[open] input[name=delay]")
		b.Type("dialog[open] input[name=delay]", "60")
		b.Type("dialog[open] input[name=destination]", "no-such-queue")
		b.Clear("dialog[open] input[name=canary_size]")
		b.Type("dialog[open] input[name=canary_size]", "3")
		b.ClickText("dialog[open] button", fmt.Sprintf("Start task over %d rows", lagunitas))
		b.Wait("the destination refused", `document.querySelector('dialog[open] .error')?.textContent.includes('INVALID_DESTINATION')`)
		if n := w.Int(t, `SELECT COUNT(*) FROM replay_tasks`); n != tasks {
			t.Errorf("a refused task was created: %d tasks, were %d", n, tasks)
		}
		b.Clear("dialog[open] input[name=destination]")
		b.Type("dialog[open] input[name=destination]", "beer-enrichment")
		b.ClickText("dialog[open] button", fmt.Sprintf("Start task over %d rows", lagunitas))
		b.Wait("the task", `document.querySelector('dialog[open] .result')?.textContent.includes('Replay task #')`)
		var filter, state, dest, canary string
		var rate, delay, matched int64
		w.DB(t).QueryRow(`SELECT filter, state, rate_per_minute, delay_seconds, COALESCE(destination, ''), matched, COALESCE(canary, '')
			FROM replay_tasks ORDER BY id DESC LIMIT 1`).Scan(&filter, &state, &rate, &delay, &dest, &matched, &canary)
		var c struct {
			Size           int     `json:"size"`
			Ratio          float64 `json:"min_success_ratio"`
			ObserveMinutes int     `json:"observe_minutes"`
		}
		json.Unmarshal([]byte(canary), &c)
		if !strings.Contains(filter, `"q":"Lagunitas"`) || state != "canary" || rate != 120 || delay != 60 ||
			dest != "beer-enrichment" || matched != lagunitas || c.Size != 3 || c.Ratio != 0.8 || c.ObserveMinutes != 15 {
			t.Errorf("task: filter %s state %s rate %d delay %d destination %q matched %d canary %s", filter, state, rate, delay, dest, matched, canary)
		}
		b.ClickText("dialog[open] a", "Replay tasks")
		b.Wait("the tasks page lists it", `document.querySelector('h1').textContent === 'Replay tasks' && document.querySelector('tbody tr')?.textContent.includes('Lagunitas')`)
		b.CheckCSP("task from a filter")
		b.Check()
	})

	t.Run("replay task from a group", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/groups"))
		b.Wait("groups", group("no beer_id"))
		sig := Eval[string](b, group("no beer_id")+`.querySelector('td .group-signature').textContent.trim()`)
		dialog(b, group("no beer_id"), "Replay task…", `document.querySelector('dialog[open] .preview-count')`)
		text := Eval[string](b, `document.querySelector('dialog[open]').innerText`)
		for _, want := range []string{"Dry run: 6 pending rows would be replayed now", "All 6 rows failed permanently"} {
			if !strings.Contains(text, want) {
				t.Errorf("the group's task dialog lacks %q:\n%s", want, text)
			}
		}
		b.Clear("dialog[open] input[name=rate]")
		b.Type("dialog[open] input[name=rate]", "30")
		b.ClickText("dialog[open] button", "Start task over 6 rows")
		b.Wait("the task", `document.querySelector('dialog[open] .result')?.textContent.includes('Replay task #')`)
		var filter, state string
		var rate, matched int64
		w.DB(t).QueryRow(`SELECT filter, state, rate_per_minute, matched FROM replay_tasks ORDER BY id DESC LIMIT 1`).Scan(&filter, &state, &rate, &matched)
		if !strings.Contains(filter, `"signature":"`+sig+`"`) || state != "running" || rate != 30 || matched != 6 {
			t.Errorf("task: filter %s (want signature %s) state %s rate %d matched %d", filter, sig, state, rate, matched)
		}
		b.ClickText("dialog[open] button", "Close")
		b.Check()
	})

	t.Run("390", func(t *testing.T) {
		b := browser.In(t)
		b.Do(chromedp.EmulateViewport(390, 844))
		every(b, "390")
		// Tables are cards: no header row in sight, each cell labelled.
		b.Do(chromedp.Navigate(w.URL + "/#/audit"))
		b.Wait("audit", `document.querySelectorAll('table.audit tbody tr').length >= 3`)
		if got := Eval[string](b, `(() => { const td = document.querySelector('table.audit tbody td:last-child');
			return getComputedStyle(document.querySelector('table.audit thead')).position + ' ' + td.dataset.label + ' ' + (td.getBoundingClientRect().width > 300) })()`); got != "absolute Outcome true" {
			t.Errorf("the audit log at 390 px is not cards (thead position, last cell's label, full width): %s", got)
		}
		if h := Eval[float64](b, `document.querySelector('header.top').getBoundingClientRect().height`); h > 100 {
			t.Errorf("the header takes %v px at 390 px", h)
		}
		b.Do(chromedp.Navigate(w.URL + "/#/groups"))
		b.Wait("groups", group("no beer_id"))
		dialog(b, group("no beer_id"), "Replay task…", `document.querySelector('dialog[open] .preview-count')`)
		b.Click("dialog[open] input[name=canary]")
		b.Wait("canary fields", `document.querySelector('dialog[open] input[name=canary_size]')`)
		b.Layout("task dialog at 390")
		b.Axe("task dialog at 390")
		b.Shot("task-dialog-390")
		closeDialog(b)
		dialog(b, group("no beer_id"), "Replay", `document.querySelector('dialog[open] .preview-count')`)
		b.Layout("replay dialog at 390")
		b.Axe("replay dialog at 390")
		closeDialog(b)
		b.CheckCSP("390")
		b.Check()
	})
}

// hasISO reports whether s holds an ISO 8601 UTC time (2026-01-02T03:04:05Z).
func hasISO(s string) bool {
	for i := 0; i+20 <= len(s); i++ {
		if s[i+4] == '-' && s[i+7] == '-' && s[i+10] == 'T' && s[i+13] == ':' && s[i+16] == ':' && s[i+19] == 'Z' {
			return true
		}
	}
	return false
}
