//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The console's pipeline selector, in workerd with the
// four pipelines of env.e2e: the header's labelled <select> narrows the
// failures list to orders (a Pipeline column shows it), the address
// carries pipeline=orders and a reload keeps it, a replay-by-filter dry run
// counts only the orders rows, the detail page shows pipeline, key and
// labels as text, the groups page lists only orders' groups, and the
// overview counts only orders (its by_pipeline table one row, its note
// naming what still covers every pipeline) until All pipelines is selected.
func TestConsolePipelineSelector(t *testing.T) {
	chromiumPath(t)
	w := startWorker(t, nil)
	tok := newPrefix("csel")
	now := time.Now().UnixMilli()
	// Four beer rows and three orders rows that the search tok matches.
	w.Exec(t, seedSQL(tok, 4, 1, now, "beer-enrichment"))
	w.Send(t, "e2e-orders-dlq",
		`{"order":{"id":"`+tok+`-o1","customer":"<b>`+tok+`-acme</b>"}}`,
		`{"order":{"id":"`+tok+`-o2","customer":"`+tok+`-initech"}}`,
		`{"order":{"id":"`+tok+`-o3","customer":"`+tok+`-globex"}}`)
	// A beer failure the search does not match: a group of another pipeline.
	w.Send(t, "beer-enrichment-dlq", `{"beer_id":"`+newPrefix("cselb")+`"}`)
	Eventually(t, 60*time.Second, "orders captured", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'e2e-orders' AND instr(raw_message, ?) > 0`, tok) == 3 &&
			w.Int(t, `SELECT COUNT(*) FROM dlq_signatures WHERE source_queue = 'beer-enrichment'`) > 0
	})

	browser := NewBrowser(t, 1280, 900, "UTC")
	br := browser.In(t)
	br.Do(chromedp.Navigate(w.URL + "/"))
	Eval[bool](br, fmt.Sprintf(`(sessionStorage.setItem('redrive.apiKey', %q), sessionStorage.setItem('redrive.adminSecret', %q), true)`, TestAPIKey, TestAdminSecret))
	br.Do(chromedp.Navigate("about:blank")) // the page reads the credentials when it loads

	const rows = `[...document.querySelectorAll('table.rows tbody tr')]`
	const sel = `header select[name=pipeline]`
	const hasColumn = `[...document.querySelectorAll('table.rows thead th')].some(h => h.textContent.trim() === 'Pipeline')`
	pipelineCells := rows + `.map(r => r.cells[[...document.querySelectorAll('table.rows thead th')].findIndex(h => h.textContent.trim() === 'Pipeline')].textContent.trim()).join(',')`

	br.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + tok))
	br.Wait("every pipeline's rows and the selector", rows+`.length === 7 && document.querySelector('`+sel+`') && `+hasColumn)
	if got := Eval[string](br, `(() => { const s = document.querySelector('`+sel+`'); return s.labels[0].firstChild.textContent.trim() + '|' + s.value + '|' + [...s.options].map(o => o.textContent).join(',') })()`); got != "Pipeline||All pipelines,beers,js,orders,tickets" {
		t.Errorf("the selector: %q", got)
	}
	if got := Eval[string](br, pipelineCells); strings.Count(got, "beers") != 4 || strings.Count(got, "orders") != 3 {
		t.Errorf("the Pipeline column over all pipelines: %q", got)
	}

	br.Select(sel, "orders")
	br.Wait("only orders rows", rows+`.length === 3`)
	if got := Eval[string](br, pipelineCells); got != "orders,orders,orders" {
		t.Errorf("the Pipeline column with orders selected: %q", got)
	}
	if h := Eval[string](br, `location.hash`); !strings.Contains(h, "pipeline=orders") || !strings.Contains(h, "q="+tok) {
		t.Errorf("the address after selecting orders: %q", h)
	}
	br.Axe("the failures list filtered to orders")

	br.Do(chromedp.Reload())
	br.Wait("orders rows after a reload", rows+`.length === 3 && document.querySelector('`+sel+`').value === 'orders' && `+hasColumn)
	if got := Eval[string](br, pipelineCells); got != "orders,orders,orders" {
		t.Errorf("the Pipeline column after a reload: %q", got)
	}
	// An address without pipeline= (an old bookmark) takes the tab's choice.
	br.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + tok))
	br.Wait("the tab's pipeline kept", `location.hash.includes('pipeline=orders') && `+rows+`.length === 3`)

	br.ClickText("button", "Replay all matching")
	br.Wait("the dry run", `document.querySelector('dialog[open] .preview-count')`)
	if got := Eval[string](br, `document.querySelector('dialog[open] .preview-count').textContent`); !strings.Contains(got, "Dry run: 3 pending rows would be replayed") {
		t.Errorf("the replay dry run counts %q, want the 3 orders rows", got)
	}
	if got := Eval[string](br, `document.querySelector('dialog[open] code').textContent`); !strings.Contains(got, `"pipeline":"orders"`) {
		t.Errorf("the dry run's filter: %q", got)
	}
	br.Axe("the replay dialog filtered to orders")
	br.ClickText("dialog[open] button", "Cancel") // nothing replayed
	br.Wait("the dialog closed", `!document.querySelector('dialog[open]')`)
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status <> 'pending' AND (row_key LIKE ? OR instr(raw_message, ?) > 0)`, tok+"%", tok); n != 0 {
		t.Errorf("%d rows left pending after a dry run only", n)
	}

	// The detail page: pipeline, key and labels, as text.
	id := w.Int(t, `SELECT id FROM dlq_messages WHERE source_queue = 'e2e-orders' AND instr(raw_message, ?) > 0 AND instr(raw_message, 'acme') > 0`, tok)
	br.Do(chromedp.Navigate(fmt.Sprintf("%s/#/failures/%d", w.URL, id)))
	br.Wait("the detail fields", `document.querySelector('dl.fields')`)
	field := func(label string) string {
		return Eval[string](br, fmt.Sprintf(`(() => { const d = [...document.querySelectorAll('dl.fields dt')].find(e => e.textContent.trim() === %q); return d ? d.nextElementSibling.textContent : '(missing)' })()`, label))
	}
	if got := field("Pipeline"); got != "orders" {
		t.Errorf("Pipeline field %q", got)
	}
	if got := field("Key"); got != tok+"-o1" {
		t.Errorf("Key field %q", got)
	}
	if got := field("Labels"); got != "customer: <b>"+tok+"-acme</b>" {
		t.Errorf("Labels field %q", got)
	}
	if Eval[bool](br, `!!document.querySelector('dl.fields b')`) {
		t.Error("a label's value became HTML")
	}
	if h := Eval[string](br, `document.querySelector('.detail a').getAttribute('href')`); !strings.Contains(h, "pipeline=orders") {
		t.Errorf("the detail's link back loses the pipeline: %q", h)
	}

	// The groups of orders only: a group is one cause in one pipeline.
	ordersGroups := w.Int(t, `SELECT COUNT(*) FROM dlq_signatures WHERE source_queue = 'e2e-orders'`)
	br.Do(chromedp.Navigate(w.URL + "/#/groups"))
	br.Wait("the orders groups", `document.querySelectorAll('.group-pipeline').length > 0`)
	if got := Eval[string](br, `[...new Set([...document.querySelectorAll('.group-pipeline')].map(e => e.textContent))].join(',')`); got != "orders" {
		t.Errorf("groups shown with orders selected belong to %q", got)
	}
	if got := Eval[int](br, `document.querySelectorAll('.group-pipeline').length`); got != int(min(ordersGroups, 25)) || ordersGroups < 1 {
		t.Errorf("%d groups shown with orders selected, want %d", got, ordersGroups)
	}
	// The tasks page: the tasks that can replay orders' rows only.
	var orderTask, beerTask struct {
		ID int64 `json:"id"`
	}
	w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{"filter": map[string]any{"pipeline": "orders", "q": tok}, "rate_per_minute": 1}).Decode(t, &orderTask)
	w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{"filter": map[string]any{"pipeline": "beers", "q": tok}, "rate_per_minute": 1}).Decode(t, &beerTask)
	if orderTask.ID == 0 || beerTask.ID == 0 {
		t.Fatalf("tasks not created: %d %d", orderTask.ID, beerTask.ID)
	}
	for _, id := range []int64{orderTask.ID, beerTask.ID} { // listed, never stepped
		if r := w.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/replay-tasks/%d/cancel", id), nil); r.Status != http.StatusOK {
			t.Fatalf("cancel task %d: %d %.300s", id, r.Status, r.Raw)
		}
	}
	br.Do(chromedp.Navigate(w.URL + "/#/tasks"))
	br.Wait("the orders task", fmt.Sprintf(`[...document.querySelectorAll('table tbody tr')].some(r => r.cells[0].textContent.trim() === '%d')`, orderTask.ID))
	if Eval[bool](br, fmt.Sprintf(`[...document.querySelectorAll('table tbody tr')].some(r => r.cells[0].textContent.trim() === '%d')`, beerTask.ID)) {
		t.Errorf("the beers task #%d is listed with orders selected", beerTask.ID)
	}
	br.Do(chromedp.Navigate(w.URL + "/#/"))
	br.Wait("the overview note and by_pipeline table", `[...document.querySelectorAll('[role=note]')].some(e => e.textContent.includes('Counts of orders only')) && document.querySelector('[aria-label="Rows by pipeline"] table')`)
	byPipeline := Eval[string](br, `[...document.querySelectorAll('[aria-label="Rows by pipeline"] tbody tr')].map(r => r.cells[0].textContent).join(',')`)
	if byPipeline != "orders" {
		t.Errorf("the by_pipeline table with orders selected: %q", byPipeline)
	}
	// The cards count orders' rows only (the beer rows are not).
	ordersPending := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND source_queue = 'e2e-orders'`)
	if got := Eval[string](br, `document.querySelector('.card-value').textContent.trim()`); got != fmt.Sprint(ordersPending) || ordersPending < 3 {
		t.Errorf("the Pending card with orders selected: %q, want %d", got, ordersPending)
	}
	// All pipelines again: every pipeline's counts, without the note.
	br.Select(sel, "")
	br.Wait("the overview of every pipeline", `[...document.querySelectorAll('[aria-label="Rows by pipeline"] tbody tr')].map(r => r.cells[0].textContent).join(',') === 'beers,js,orders,tickets' && ![...document.querySelectorAll('[role=note]')].some(e => e.textContent.includes('Counts of'))`)
	allPending := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`)
	if got := Eval[string](br, `document.querySelector('.card-value').textContent.trim()`); got != fmt.Sprint(allPending) || allPending < ordersPending+4 {
		t.Errorf("the Pending card over all pipelines: %q, want %d", got, allPending)
	}
	br.Select(sel, "orders")
	br.Wait("orders selected again", `[...document.querySelectorAll('[role=note]')].some(e => e.textContent.includes('Counts of orders only'))`)
	if got := Eval[string](br, `[...document.querySelectorAll('[aria-label="Rows by source queue"] tbody a')].map(a => a.textContent).join(',')`); got != "e2e-orders" {
		t.Errorf("source queues linked with orders selected: %q, want only e2e-orders", got)
	}
	br.Axe("the overview with a pipeline selected")

	// At 390 px, with orders selected: no page scrolls sideways or clips a
	// cell, and axe finds nothing.
	phone := NewBrowser(t, 390, 844, "UTC")
	ph := phone.In(t)
	ph.Do(chromedp.Navigate(w.URL + "/"))
	Eval[bool](ph, fmt.Sprintf(`(sessionStorage.setItem('redrive.apiKey', %q), sessionStorage.setItem('redrive.adminSecret', %q), true)`, TestAPIKey, TestAdminSecret))
	ph.Do(chromedp.Navigate("about:blank"))
	for _, p := range []struct{ hash, ready string }{
		{"/#/failures?pipeline=orders&q=" + tok, rows + `.length === 3 && document.querySelector('` + sel + `')`},
		{fmt.Sprintf("/#/failures/%d", id), `document.querySelector('dl.fields')`},
		{"/#/groups", `document.querySelectorAll('.group-pipeline').length > 0`},
		{"/#/", `document.querySelector('[aria-label="Rows by pipeline"] table')`},
	} {
		ph.Do(chromedp.Navigate(w.URL + p.hash))
		ph.Wait(p.hash, p.ready)
		ph.Layout(p.hash + " at 390 px")
		ph.Axe(p.hash + " at 390 px")
	}
	ph.Check()

	// All pipelines again: the address drops it, the list has every row.
	br.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + tok))
	br.Select(sel, "")
	br.Wait("every pipeline's rows again", rows+`.length === 7 && !location.hash.includes('pipeline=')`)
	br.Check()
}
