//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// TestConsoleGroupsAndHistory: the groups page shows each failure group
// with its counts (a permanent one says replaying fails again), acknowledges
// a whole group in one action, and a row's detail shows its attempt
// history. CONSOLE_DOCS_SCREENSHOT=1 writes the screenshots of docs/admin-api.md.
func TestConsoleGroupsAndHistory(t *testing.T) {
	chromiumPath(t)
	w := startWorker(t, nil)

	// A beer failing 4 times (500), so a row with a history.
	token := uniq("console-hist")
	w.Provider.On(token, Behavior{Status: 500, Body: `{"error":{"message":"upstream busy"}}`})
	b := enrichment.Beer{BeerID: "id-" + token, BeerName: "Hop Stoopid " + token, Brewer: "Lagunitas"}
	enrich(t, w, b)
	// Poison in 3 groups, straight onto the DLQ: hostile text among them.
	var msgs []map[string]any
	for i := 0; i < 30; i++ {
		switch i % 3 {
		case 0:
			msgs = append(msgs, map[string]any{"body": fmt.Sprintf(`<img src=x onerror="window.__pwned=%d">`, i)})
		case 1:
			msgs = append(msgs, map[string]any{"body": fmt.Sprintf(`{"beer_id":%d}`, i), "content_type": "json"})
		default:
			msgs = append(msgs, map[string]any{"body": fmt.Sprintf(`{"beer_name":"No id %d"}`, i), "content_type": "json"})
		}
	}
	if r := w.Admin(t, http.MethodPost, "/__dev/send", map[string]any{"queue": "beer-enrichment-dlq", "messages": msgs}); r.Status != http.StatusOK {
		t.Fatalf("send: %d %s", r.Status, r.Raw)
	}
	var id int64
	Eventually(t, 2*time.Minute, "every failure captured", func() bool {
		id = w.Int(t, `SELECT COALESCE(MAX(id), 0) FROM dlq_messages WHERE row_key = ?`, b.BeerID)
		return id > 0 && w.Int(t, `SELECT COUNT(*) FROM dlq_messages`) == 31
	})

	browser := NewBrowser(t, 1280, 900, "Europe/Berlin")
	br := browser.In(t)
	br.Do(chromedp.Navigate(w.URL + "/"))
	Eval[bool](br, fmt.Sprintf(`(sessionStorage.setItem('redrive.apiKey', %q), sessionStorage.setItem('redrive.adminSecret', %q), true)`, TestAPIKey, TestAdminSecret))

	br.Do(chromedp.Navigate("about:blank")) // the page reads the credentials when it loads
	br.Do(chromedp.Navigate(w.URL + "/#/"))
	br.Wait("the overview names the live version", `document.querySelector('.version-line')?.textContent.includes('Live version')`)
	br.Do(chromedp.Navigate(w.URL + "/#/groups"))
	br.Wait("groups", `document.querySelectorAll('table.groups tbody tr').length === 4 && document.body.innerText.includes('Live version:')`)
	text := br.Text()
	for _, want := range []string{"unparseable: body is not JSON: invalid character <q> looking for beginning of value", "unparseable: beer_id is not a string",
		"unparseable: no beer_id", "status <n>: upstream busy", "replaying them unchanged fails again", "Live version:"} {
		if !strings.Contains(text, want) {
			t.Errorf("the groups page lacks %q:\n%.3000s", want, text)
		}
	}
	shot := br.Shot("groups")
	br.Check()

	// Acknowledge the "no beer_id" group from its row.
	Eval[bool](br, `([...[...document.querySelectorAll('table.groups tbody tr')].find(r => r.textContent.includes('no beer_id')).querySelectorAll('button')].find(x => x.textContent.trim() === 'Acknowledge').click(), true)`)
	br.Wait("acknowledge dialog", `document.querySelector('dialog[open]')`)
	br.Shot("groups-acknowledge-dialog")
	br.Wait("dry run done", `[...document.querySelectorAll('dialog[open] button')].some(b => b.textContent.trim() === 'Acknowledge 10 rows')`)
	br.ClickText("dialog button", "Acknowledge 10 rows")
	Eventually(t, 30*time.Second, "the group is acknowledged", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged'`) == 10
	})
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged' AND failure_reason NOT LIKE '%no beer_id%'`); n != 0 {
		t.Errorf("%d rows of other groups acknowledged", n)
	}

	// The detail's history.
	br.Do(chromedp.Navigate(fmt.Sprintf("%s/#/failures/%d", w.URL, id)))
	br.Wait("history", `document.querySelectorAll('table.history tbody tr').length === 4`)
	text = br.Text()
	for _, want := range []string{"Why it failed", "status 500", "transient", "Latest failure on version"} {
		if !strings.Contains(text, want) {
			t.Errorf("the detail lacks %q", want)
		}
	}
	hist := br.Shot("detail-history")
	if got := Eval[string](br, `String(window.__pwned) + ' ' + document.querySelectorAll('img').length`); got != "undefined 0" {
		t.Errorf("hostile text became markup: %q", got)
	}
	br.Check()
	if os.Getenv("CONSOLE_DOCS_SCREENSHOT") != "" {
		root, _ := sqlitetest.Root()
		for src, dst := range map[string]string{shot: "console-groups.png", hist: "console-history.png"} {
			png, _ := os.ReadFile(src)
			if err := os.WriteFile(filepath.Join(root, "docs", dst), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
