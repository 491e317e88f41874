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

// TestConsoleIncidents: an operator acknowledges a failure group from the
// groups page (the owner is the signed-in principal unless changed, the
// note is shown as text) and resolves it from a row's detail page; the
// audit log names that principal for both. A viewer sees the group's
// status, with the action disabled and why. The overview's breaker panel
// says the breaker is closed and offers no reset; the alert events page
// shows the events and the channels, and tells a key limited to pipelines
// that they are every pipeline's view. Every state visited fits 1280×800
// and 390×844 and has no axe-core violation; no CSP violation.
func TestConsoleIncidents(t *testing.T) {
	chromiumPath(t)
	w := shared
	prefix := newPrefix("cinc")
	bodies := make([]string, 3)
	for i := range bodies {
		bodies[i] = fmt.Sprintf("{not json %s %d", prefix, i)
	}
	w.Send(t, "beer-enrichment-dlq", bodies...)
	var id int64
	var sig string
	Eventually(t, 2*time.Minute, "the poison rows and their group", func() bool {
		err := w.DB(t).QueryRow(`SELECT m.id, m.signature FROM dlq_messages m JOIN dlq_signatures s ON s.signature = m.signature
			WHERE instr(m.raw_message, ?) > 0 ORDER BY m.id DESC LIMIT 1`, prefix).Scan(&id, &sig)
		return err == nil && w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE instr(raw_message, ?) > 0`, prefix) == 3
	})
	// Other tests share the group (every "{not json" body is one cause): open it.
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/groups/"+sig+"/status", map[string]any{"status": "open", "owner": "", "note": ""}); r.Status != 200 {
		t.Fatalf("open the group: %d %s", r.Status, r.Raw)
	}
	// row is the group's row on the groups page.
	row := fmt.Sprintf(`[...document.querySelectorAll('table.groups tbody tr')].find(r => r.querySelector('.group-signature')?.textContent === %q)`, sig)
	groupsPage := w.URL + "/#/groups?class=poison&limit=100"
	operator := prefix + "-op"
	opToken := newKey(t, w, operator, "operator")
	b := rolesBrowser(t)
	hostile := `<img src=x onerror="window.__pwned=1"> on it`

	t.Run("operator acknowledges from the groups page", func(t *testing.T) {
		b := b.In(t)
		signInWithKey(b, w, opToken, "key:"+operator, "operator")
		b.Do(chromedp.Navigate(groupsPage))
		b.Wait("the group, open", row+`?.querySelector('.incident-status')?.textContent === 'open'`)
		// The status filter: only open groups, then acknowledged ones.
		b.Select("select[name=incident]", "open")
		b.Wait("open groups only", `location.hash.includes('incident=open') && !document.querySelector('table.groups[aria-busy=true]') && `+row+` && [...document.querySelectorAll('table.groups .incident-status')].every(e => e.textContent === 'open')`)
		Eval[bool](b, row+`.querySelector('td.incident-cell button').click() || true`)
		b.Wait("the dialog", `document.querySelector('dialog[open] input[name=owner]')`)
		if got := Eval[string](b, `document.querySelector('dialog[open] input[name=owner]').value`); got != "key:"+operator {
			t.Errorf("the owner defaults to %q, want the principal key:%s", got, operator)
		}
		b.Type("dialog[open] textarea[name=note]", hostile)
		fitsAndAxe(b, "incident dialog")
		b.ClickText("dialog[open] button", "Acknowledge")
		b.Wait("the row acknowledged", `!document.querySelector('dialog[open]') && `+row+`?.querySelector('.incident-status')?.textContent === 'acknowledged'`)
		// The row stays, showing its new status, though the filter says open.
		text := Eval[string](b, row+`.querySelector('td.incident-cell').textContent`)
		wantContains(t, "the group's incident", text, "owner key:"+operator, hostile)
		wantContains(t, "the page's status line", textOf(b, "main .result[role=status]"), "is now acknowledged, owned by key:"+operator)
		if Eval[bool](b, `!!window.__pwned || !!document.querySelector('main img')`) {
			t.Error("the note was rendered as HTML")
		}
		var status, owner, note string
		w.DB(t).QueryRow(`SELECT incident, COALESCE(owner, ''), COALESCE(note, '') FROM dlq_signatures WHERE signature = ?`, sig).Scan(&status, &owner, &note)
		if status != "acknowledged" || owner != "key:"+operator || note != hostile {
			t.Errorf("the group is %s, owner %q, note %q", status, owner, note)
		}
		b.Select("select[name=incident]", "acknowledged")
		b.Wait("acknowledged groups", `location.hash.includes('incident=acknowledged') && `+row+`?.querySelector('.incident-status')?.textContent === 'acknowledged'`)
		fitsAndAxe(b, "groups with incidents")
		b.Check()
	})

	t.Run("operator resolves from the detail page", func(t *testing.T) {
		b := b.In(t)
		b.Do(chromedp.Navigate(fmt.Sprintf("%s/#/failures/%d", w.URL, id)))
		b.Wait("the group's incident", `document.querySelector('.group-incident .incident-status')?.textContent === 'acknowledged'`)
		wantContains(t, "the detail's incident", textOf(b, ".group-incident"), "owner key:"+operator)
		b.ClickText(".group-incident button", "Change status…")
		b.Wait("the dialog", `document.querySelector('dialog[open] input[name=owner]')`)
		b.Clear("dialog[open] textarea[name=note]")
		b.Type("dialog[open] textarea[name=note]", "fixed upstream")
		b.ClickText("dialog[open] button", "Resolve")
		b.Wait("resolved", `!document.querySelector('dialog[open]') && document.querySelector('.group-incident .incident-status')?.textContent === 'resolved'`)
		if got := w.Int(t, `SELECT COUNT(*) FROM dlq_signatures WHERE signature = ? AND incident = 'resolved' AND note = 'fixed upstream'`, sig); got != 1 {
			t.Error("the group is not resolved with its note")
		}
		fitsAndAxe(b, "detail with incident")
		// The audit log names the operator for both changes.
		r := w.Admin(t, http.MethodGet, "/admin/audit?action=group_status&limit=100", nil)
		var page struct {
			Entries []struct {
				Principal *string `json:"principal"`
				Outcome   string  `json:"outcome"`
				Note      *string `json:"note"`
			} `json:"entries"`
		}
		r.Decode(t, &page)
		n := 0
		for _, e := range page.Entries {
			if e.Principal != nil && *e.Principal == "key:"+operator && e.Outcome == "ok" {
				n++
			}
		}
		if r.Status != 200 || n != 2 {
			t.Errorf("GET /admin/audit?action=group_status: %d entries by key:%s, want 2: %d %.2000s", n, operator, r.Status, r.Raw)
		}
		b.CheckCSP("operator")
		b.Check()
	})

	t.Run("viewer sees the actions disabled and the breaker closed", func(t *testing.T) {
		b := b.In(t)
		if r := w.Admin(t, http.MethodPost, "/admin/enrichment/breaker/reset", nil); r.Status != 200 {
			t.Fatalf("reset the breaker: %d %s", r.Status, r.Raw)
		}
		viewer := prefix + "-viewer"
		token := newKey(t, w, viewer, "viewer")
		b.ClickText("header button", "Sign out")
		signInWithKey(b, w, token, "key:"+viewer, "viewer")
		b.Wait("the breaker panel", `document.querySelector('#h-breaker') && document.querySelector('.breaker-state')`)
		wantContains(t, "the breaker panel", textOf(b, "section[aria-labelledby=h-breaker]"), "Provider circuit breaker closed", "Closed", "provider calls go through")
		wantButtons(t, b, "overview", map[string]string{"Close the breaker…": "missing"})
		if Eval[bool](b, `!!document.querySelector('#breaker-needs')`) {
			t.Error("a closed breaker's panel says what closing it needs")
		}
		b.Do(chromedp.Navigate(groupsPage))
		b.Wait("the group", row+`?.querySelector('.incident-status')?.textContent === 'resolved'`)
		if got := Eval[string](b, `[...document.querySelectorAll('td.incident-cell button')].map(x => x.disabled + ' ' + x.getAttribute('aria-describedby')).join(',')`); strings.Contains(got, "false") || got == "" {
			t.Errorf("a viewer's status buttons (disabled, described by): %s", got)
		}
		wantContains(t, "the reason", textOf(b, "#groups-needs"), "Incident status: needs the acknowledge permission", "Your role is viewer")
		fitsAndAxe(b, "viewer groups")
		// The alert events page: every pipeline's view, readable by a viewer.
		b.Do(chromedp.Navigate(w.URL + "/#/alerts"))
		b.Wait("the events page", `document.querySelector('.failed-count') && document.querySelector('table.events')`)
		fitsAndAxe(b, "viewer alert events")
		b.CheckCSP("viewer")
		b.Check()
	})

	t.Run("a scoped key is told the events are every pipeline's view", func(t *testing.T) {
		b := b.In(t)
		scopedName := prefix + "-beers"
		token := newKey(t, w, scopedName, "operator", "beers")
		b.ClickText("header button", "Sign out")
		signInWithKey(b, w, token, "key:"+scopedName, "operator")
		b.Do(chromedp.Navigate(w.URL + "/#/alerts"))
		b.Wait("the note", `document.querySelector('main [role=note]')`)
		wantContains(t, "the alert events page", textOf(b, "main [role=note]"), "every pipeline's view", "not available to a key limited to pipelines")
		if Eval[bool](b, `!!document.querySelector('main .error, table.events')`) {
			t.Errorf("a scoped key's events page: %s", b.Text())
		}
		fitsAndAxe(b, "scoped alert events")
		b.CheckCSP("scoped")
		b.Check()
	})
}
