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
)

// TestConsoleTasksExportAndEdit: the console's replay tasks page shows a
// task's progress and pauses, resumes and cancels it; the failures page
// exports exactly the rows of its filter (CSV with formula cells
// neutralised, NDJSON); a row's detail edits its JSON body (invalid JSON
// cannot be sent, a note is required) and replays the edited value,
// audited, the stored body unchanged.
func TestConsoleTasksExportAndEdit(t *testing.T) {
	chromiumPath(t)
	w := startWorker(t, nil)
	prefix := newPrefix("ctasks")
	now := time.Now().UnixMilli()
	w.Exec(t, seedSQL(prefix, 6, 1, now, "beer-enrichment"))
	// A brewer a spreadsheet would run as a formula.
	w.Exec(t, fmt.Sprintf(`UPDATE dlq_messages SET label_2 = '=HYPERLINK("http://x")' WHERE row_key = '%s-b-1'`, prefix))
	ids := ownIDs(t, w, prefix)

	// A task over this prefix's rows, slow enough to stay running.
	r := w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{"filter": map[string]any{"q": prefix}, "rate_per_minute": 1})
	if r.Status != http.StatusAccepted {
		t.Fatalf("create task: %d %s", r.Status, r.Raw)
	}
	var task struct {
		ID int64 `json:"id"`
	}
	r.Decode(t, &task)
	w.FireCron(t, cronFrequent, time.Now().Add(time.Minute).Truncate(time.Second))
	sent := w.Int(t, `SELECT sent FROM replay_tasks WHERE id = ?`, task.ID)
	if sent < 1 || sent >= 6 {
		t.Fatalf("the task's first step sent %d of 6", sent)
	}

	browser := NewBrowser(t, 1280, 900, "Europe/Berlin")
	br := browser.In(t)
	br.Do(chromedp.Navigate(w.URL + "/"))
	Eval[bool](br, fmt.Sprintf(`(sessionStorage.setItem('redrive.apiKey', %q), sessionStorage.setItem('redrive.adminSecret', %q), true)`, TestAPIKey, TestAdminSecret))
	br.Do(chromedp.Navigate("about:blank")) // the page reads the credentials when it loads

	t.Run("tasks", func(t *testing.T) {
		br := browser.In(t)
		br.Do(chromedp.Navigate(w.URL + "/#/tasks"))
		row := fmt.Sprintf(`[...document.querySelectorAll('tbody tr')].find(r => r.cells[0].textContent.trim() === '%d')`, task.ID)
		br.Wait("the task's row", row)
		text := Eval[string](br, row+`.innerText`)
		for _, want := range []string{"running", fmt.Sprintf("%d sent of 6", sent), prefix} {
			if !strings.Contains(text, want) {
				t.Errorf("the task's row lacks %q: %s", want, text)
			}
		}
		if got := Eval[string](br, row+`.querySelector('progress').value + '/' + `+row+`.querySelector('progress').max`); got != fmt.Sprintf("%d/6", sent) {
			t.Errorf("progress %s, want %d/6", got, sent)
		}
		for _, step := range []struct{ click, state, next string }{{"Pause", "paused", "Resume"}, {"Resume", "running", "Pause"}, {"Cancel", "cancelled", ""}} {
			Eval[bool](br, fmt.Sprintf(`([...%s.querySelectorAll('button')].find(b => b.textContent.trim() === %q).click(), true)`, row, step.click))
			Eventually(t, 20*time.Second, "task "+step.state, func() bool {
				var state string
				w.DB(t).QueryRow(`SELECT state FROM replay_tasks WHERE id = ?`, task.ID).Scan(&state)
				return state == step.state
			})
			buttons := fmt.Sprintf(`[...%s.querySelectorAll('button')].map(b => b.textContent.trim()).join(',')`, row)
			if step.next != "" {
				br.Wait("the "+step.next+" button", fmt.Sprintf(`%s.includes(%q) && %s.cells[1].textContent.includes(%q)`, buttons, step.next, row, step.state))
			} else {
				br.Wait("no actions on a cancelled task", fmt.Sprintf(`%s === '' && %s.cells[1].textContent.includes('cancelled')`, buttons, row))
			}
		}
		br.Shot("console-tasks")
		br.Check()
	})

	t.Run("export", func(t *testing.T) {
		br := browser.In(t)
		br.Do(chromedp.Navigate(w.URL + "/#/failures?status=all&q=" + prefix))
		br.Wait("the filtered list", `document.querySelectorAll('table.rows tbody tr').length === 6`)
		// The download's blob is kept for the test instead of saved.
		Eval[bool](br, `(window.__blobs = [], URL.createObjectURL = (b) => (window.__blobs.push(b), 'blob:kept'), true)`)
		br.ClickText("button", "Export CSV")
		br.Wait("the CSV blob", `window.__blobs.length === 1`)
		br.ClickText("button", "Export NDJSON")
		br.Wait("the NDJSON blob", `window.__blobs.length === 2`)
		Eval[bool](br, `(Promise.all(window.__blobs.map(b => b.text())).then(t => { window.__texts = t }), true)`)
		br.Wait("the blobs' text", `window.__texts`)
		csv := Eval[string](br, `window.__texts[0]`)
		lines := strings.Split(strings.TrimRight(csv, "\r\n"), "\n")
		if len(lines) != 7 || !strings.HasPrefix(lines[0], "id,") {
			t.Fatalf("CSV: %d lines, want a header and 6 rows:\n%s", len(lines), csv)
		}
		if !strings.Contains(csv, `'=HYPERLINK(`) || strings.Contains(csv, `,=HYPERLINK(`) || strings.Contains(csv, `,"=HYPERLINK(`) {
			t.Errorf("the formula cell is not neutralised:\n%s", csv)
		}
		got := map[int64]bool{}
		for _, line := range strings.Split(strings.TrimSpace(Eval[string](br, `window.__texts[1]`)), "\n") {
			var row struct {
				ID     int64  `json:"id"`
				BeerID string `json:"beer_id"`
			}
			if err := json.Unmarshal([]byte(line), &row); err != nil || !strings.HasPrefix(row.BeerID, prefix) {
				t.Fatalf("NDJSON line %q: %v", line, err)
			}
			got[row.ID] = true
		}
		for _, id := range ids {
			if !got[id] || !strings.Contains(csv, fmt.Sprintf("\n%d,", id)) {
				t.Errorf("row %d missing from the export", id)
			}
		}
		if len(got) != len(ids) {
			t.Errorf("NDJSON has %d rows, want %d", len(got), len(ids))
		}
		br.Check()
	})

	t.Run("edit and replay", func(t *testing.T) {
		br := browser.In(t)
		var id int64
		var stored string
		w.DB(t).QueryRow(`SELECT id, raw_message FROM dlq_messages WHERE row_key LIKE ? AND status = 'pending' ORDER BY id LIMIT 1`, prefix+"-%").Scan(&id, &stored)
		if id == 0 {
			t.Fatal("no pending row left to edit")
		}
		br.Do(chromedp.Navigate(fmt.Sprintf("%s/#/failures/%d", w.URL, id)))
		br.ClickText("button", "Edit and replay")
		br.Wait("the edit dialog", `document.querySelector('dialog[open] textarea')`)
		send := `[...document.querySelectorAll('dialog[open] button')].find(b => b.textContent.trim() === 'Replay edited body')`
		setBody := func(v string) {
			Eval[bool](br, fmt.Sprintf(`(() => { const e = document.querySelector('dialog[open] textarea'); e.value = %q;
				e.dispatchEvent(new Event('input', {bubbles: true})); return true })()`, v))
		}
		setBody(`{"beer_id": `)
		br.Wait("invalid JSON refused", `document.querySelector('dialog[open] [role=alert]')?.textContent.includes('Not valid JSON') && `+send+`.disabled`)
		edited := fmt.Sprintf(`{"beer_id":"%s-edited","beer_name":"Fixed","brewer":"<b>Brewer</b>"}`, prefix)
		setBody(edited)
		br.Wait("valid JSON, no note yet", `!document.querySelector('dialog[open] [role=alert]') && `+send+`.disabled`)
		br.Type("dialog[open] label:nth-of-type(2) textarea", "beer_id was the wrong one")
		br.Wait("the send button", `!`+send+`.disabled`)
		br.ClickText("dialog[open] button", "Replay edited body")
		br.Wait("sent", `document.querySelector('dialog[open] .result')?.textContent.includes('Sent to beer-enrichment')`)
		br.ClickText("dialog[open] button", "Close")
		var status, raw, note string
		w.DB(t).QueryRow(`SELECT status, raw_message FROM dlq_messages WHERE id = ?`, id).Scan(&status, &raw)
		if (status != "replaying" && status != "replayed") || raw != stored {
			t.Errorf("row %d: status %s, body %q (stored %q)", id, status, raw, stored)
		}
		w.DB(t).QueryRow(`SELECT COALESCE(note, '') FROM admin_audit WHERE action = 'replay_edited' AND ids = ?`, fmt.Sprintf("[%d]", id)).Scan(&note)
		if note != "beer_id was the wrong one" {
			t.Errorf("audit note %q", note)
		}
		br.Check()
	})
}
