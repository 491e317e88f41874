//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The console per role: a named key signs in through the form, and each
// page offers the actions its role's permissions allow; the others are
// disabled with the reason beside them (or, for a row's detail page, a
// message instead of a page that fails). A 403 is shown where it happened
// and leaves the tab signed in; a 401 (a revoked key) signs it out with
// its reason. A key limited to pipelines sees its pipelines alone and no
// panel of every pipeline. Every page and state visited fits 1280×800 and
// 390×844 and has no axe-core violation; the page records no CSP
// violation.

// rolesBrowser starts Chromium at 1280×800, recording CSP violations.
func rolesBrowser(t *testing.T) *Browser {
	b := NewBrowser(t, 1280, 800, "UTC")
	b.WatchCSP()
	return b
}

// signInWithKey signs in through the form with a named key's token and
// waits for the header to name the principal and its role.
func signInWithKey(b *Browser, w *Worker, token, principal, role string) {
	b.t.Helper()
	b.Do(chromedp.Navigate(w.URL + "/"))
	b.Wait("the sign-in form", `document.querySelector('input[name=key]')`)
	b.Type("input[name=key]", token+"\r")
	b.Wait("signed in as "+principal, fmt.Sprintf(`document.querySelector('#who')?.textContent.includes(%q)`, principal+" ("+role+")"))
	if got := Eval[string](b, `sessionStorage.getItem('redrive.token') + '|' + document.cookie + '|' + location.href.includes('rdk_')`); got != token+"||false" {
		b.t.Errorf("the token is kept as %q, want in sessionStorage only", got)
	}
}

// fitsAndAxe checks the page as it is now at 1280×800 and at 390×844: it
// fits its window, and axe finds nothing.
func fitsAndAxe(b *Browser, what string) {
	b.t.Helper()
	b.Layout(what + " at 1280")
	b.Axe(what + " at 1280")
	b.Do(chromedp.EmulateViewport(390, 844))
	b.Layout(what + " at 390")
	b.Axe(what + " at 390")
	b.Shot("roles-" + strings.NewReplacer(" ", "-", "/", "-", "'", "").Replace(what) + "-390")
	b.Do(chromedp.EmulateViewport(1280, 800))
}

// button is the state of the first button in main (dialogs included)
// whose text is text: "enabled", "disabled" or "missing".
func button(b *Browser, text string) string {
	b.t.Helper()
	return Eval[string](b, fmt.Sprintf(`(() => { const e = [...document.querySelectorAll('main button, dialog button')].find(x => x.textContent.trim() === %q);
		return e ? (e.disabled ? 'disabled' : 'enabled') : 'missing' })()`, text))
}

// wantButtons fails for each button whose state differs.
func wantButtons(t *testing.T, b *Browser, where string, want map[string]string) {
	t.Helper()
	for text, state := range want {
		if got := button(b, text); got != state {
			t.Errorf("%s: button %q is %s, want %s", where, text, got, state)
		}
	}
}

// textOf is the text of the first element of a CSS selector ("" when none).
func textOf(b *Browser, css string) string {
	b.t.Helper()
	return Eval[string](b, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ''`, css))
}

// wantContains fails for each of wants that text lacks.
func wantContains(t *testing.T, where, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q: %q", where, want, text)
		}
	}
}

// navLinks is the header's navigation, as its links' text.
func navLinks(b *Browser) string {
	return Eval[string](b, `[...document.querySelectorAll('header nav a')].map(a => a.textContent.trim()).join(',')`)
}

// stillSignedIn fails unless the tab is still signed in with token.
func stillSignedIn(t *testing.T, b *Browser, token string) {
	t.Helper()
	if got := Eval[string](b, `(document.querySelector('input[name=key]') ? 'form ' : '') + (document.querySelector('#who') ? 'who ' : '') + sessionStorage.getItem('redrive.token')`); got != "who "+token {
		t.Errorf("after a 403 the tab shows %q, want still signed in", got)
	}
}

const failuresRows = `document.querySelectorAll('table.rows tbody tr')`

func TestConsoleRolesViewer(t *testing.T) {
	chromiumPath(t)
	w := shared
	prefix := newPrefix("rview")
	w.Exec(t, seedSQL(prefix, 3, 1, time.Now().UnixMilli(), "beer-enrichment"))
	ids := ownIDs(t, w, prefix)
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{"filter": map[string]any{"q": prefix}, "rate_per_minute": 1}); r.Status != http.StatusAccepted {
		t.Fatalf("create task: %d %s", r.Status, r.Raw)
	}
	name := prefix + "-viewer"
	token := newKey(t, w, name, "viewer")
	b := rolesBrowser(t)

	t.Run("sign-in form", func(t *testing.T) {
		b := b.In(t)
		b.Do(chromedp.Navigate(w.URL + "/"))
		b.Wait("the sign-in form", `document.querySelector('input[name=key]') && document.querySelector('input[name=api-key]')`)
		fitsAndAxe(b, "sign-in")
		// A token no key matches: refused, nothing kept.
		b.Type("input[name=key]", "rdk_0123456789abcdef_"+strings.Repeat("A", 43)+"\r")
		b.Wait("the refusal", `document.querySelector('#signin-error')?.textContent.includes('No key matches')`)
		if n := Eval[float64](b, `sessionStorage.length`); n != 0 {
			t.Errorf("%v items in sessionStorage after a refused key", n)
		}
		fitsAndAxe(b, "sign-in refused")
		b.Clear("input[name=key]")
		b.Check()
	})

	t.Run("overview", func(t *testing.T) {
		b := b.In(t)
		signInWithKey(b, w, token, "key:"+name, "viewer")
		b.Wait("the overview", `document.querySelectorAll('.card-value').length === 6 && document.querySelector('#h-breaker')`)
		if got := navLinks(b); strings.Contains(got, "Keys") {
			t.Errorf("a viewer's navigation offers Keys: %s", got)
		}
		// A closed breaker: its state, and no reset to offer.
		wantContains(t, "the breaker panel", textOf(b, ".breaker-state"), "provider calls go through")
		wantButtons(t, b, "overview", map[string]string{"Close the breaker…": "missing"})
		fitsAndAxe(b, "viewer overview")
		b.Check()
	})

	t.Run("failures", func(t *testing.T) {
		b := b.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + prefix))
		b.Wait("the viewer's rows", failuresRows+`.length === 3`)
		b.Click("table.rows tbody tr input[type=checkbox]")
		b.Wait("a row selected", `document.querySelector('.toolbar .count').textContent.includes('1 selected')`)
		wantButtons(t, b, "failures", map[string]string{"Replay selected": "disabled", "Acknowledge selected": "disabled",
			"Replay all matching": "disabled", "Acknowledge all matching": "disabled", "Replay task…": "disabled", "Export CSV": "enabled"})
		wantContains(t, "the failures' reasons", textOf(b, "#failures-needs"), "Replay: needs the replay permission", "Acknowledge: needs the acknowledge permission",
			"Replay task…: needs the tasks permission", "Export with bodies, A row's detail page: needs the read_body permission", "Your role is viewer")
		if got := Eval[string](b, `(() => { const c = document.querySelector('input[name=include_raw]'); return c.disabled + ' ' + c.getAttribute('aria-describedby') })()`); got != "true failures-needs" {
			t.Errorf("the export's bodies checkbox: %s, want disabled and described", got)
		}
		if n := Eval[float64](b, `document.querySelectorAll('table.rows tbody a[href*="/failures/"]').length`); n != 0 {
			t.Errorf("%v rows link to a detail page the viewer cannot open", n)
		}
		fitsAndAxe(b, "viewer failures")

		// The API refuses what the role lacks (403): shown in place, the
		// tab stays signed in. The disabled button is forced to send it.
		Eval[bool](b, `(() => { const e = [...document.querySelectorAll('main button')].find(x => x.textContent.trim() === 'Replay selected'); e.disabled = false; e.click(); return true })()`)
		b.Wait("the refusal in the dialog", `document.querySelector('dialog[open] .error')?.textContent.includes('lacks the replay permission')`)
		wantContains(t, "the dialog's refusal", textOf(b, "dialog[open] .error"), "Not allowed:", "key:"+name)
		stillSignedIn(t, b, token)
		fitsAndAxe(b, "viewer refused replay")
		b.ClickText("dialog[open] button", "Cancel")
		b.Wait("the dialog closed", `!document.querySelector('dialog[open]')`)
		stillSignedIn(t, b, token)
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND status = 'pending'`, prefix+"-b-%"); n != 3 {
			t.Errorf("%d of 3 rows pending after a refused replay", n)
		}
		b.Check()
	})

	t.Run("detail", func(t *testing.T) {
		b := b.In(t)
		b.Do(chromedp.Navigate(fmt.Sprintf("%s/#/failures/%d", w.URL, ids[0])))
		b.Wait("the detail's message", `document.querySelector('main .needs')`)
		wantContains(t, "the detail page", textOf(b, "main .needs"), "Needs the read_body permission; your role is viewer.")
		if Eval[bool](b, `!!document.querySelector('pre.payload, main .error')`) {
			t.Error("a viewer's detail page shows a body or an error")
		}
		fitsAndAxe(b, "viewer detail")
		b.Check()
	})

	t.Run("tasks and keys", func(t *testing.T) {
		b := b.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/tasks"))
		b.Wait("the tasks", `document.querySelector('tbody tr progress')`)
		wantButtons(t, b, "tasks", map[string]string{"Pause": "disabled", "Cancel": "disabled"})
		wantContains(t, "the tasks' reason", textOf(b, "#tasks-needs"), "needs the tasks permission", "Your role is viewer")
		fitsAndAxe(b, "viewer tasks")
		b.Do(chromedp.Navigate(w.URL + "/#/keys"))
		b.Wait("the keys page's message", `document.querySelector('h1').textContent === 'API keys' && document.querySelector('main .needs')`)
		wantContains(t, "the keys page", textOf(b, "main .needs"), "Managing keys: Needs the keys permission; your role is viewer.")
		fitsAndAxe(b, "viewer keys")
		b.CheckCSP("viewer")
		b.Check()
	})
}

func TestConsoleRolesOperator(t *testing.T) {
	chromiumPath(t)
	w := shared
	prefix := newPrefix("roper")
	w.Exec(t, seedSQL(prefix, 3, 1, time.Now().UnixMilli(), "beer-enrichment"))
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{"filter": map[string]any{"q": prefix}, "rate_per_minute": 1}); r.Status != http.StatusAccepted {
		t.Fatalf("create task: %d %s", r.Status, r.Raw)
	}
	name := prefix + "-operator"
	token := newKey(t, w, name, "operator")
	b := rolesBrowser(t)
	signInWithKey(b.In(t), w, token, "key:"+name, "operator")

	t.Run("failures", func(t *testing.T) {
		b := b.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + prefix))
		b.Wait("the operator's rows", failuresRows+`.length === 3`)
		b.Click("table.rows tbody tr input[type=checkbox]")
		b.Wait("a row selected", `document.querySelector('.toolbar .count').textContent.includes('1 selected')`)
		wantButtons(t, b, "failures", map[string]string{"Replay selected": "enabled", "Acknowledge selected": "enabled",
			"Replay all matching": "enabled", "Acknowledge all matching": "enabled", "Replay task…": "enabled"})
		if Eval[bool](b, `!!document.querySelector('#failures-needs')`) {
			t.Errorf("an operator is told of missing permissions: %s", textOf(b, "#failures-needs"))
		}
		if Eval[bool](b, `document.querySelector('input[name=include_raw]').disabled`) {
			t.Error("an operator cannot export bodies")
		}
		if n := Eval[float64](b, `document.querySelectorAll('table.rows tbody a[href*="/failures/"]').length`); n != 3 {
			t.Errorf("%v of 3 rows link to their detail", n)
		}
		// An operator acknowledges the selected row.
		b.ClickText("main button", "Acknowledge selected")
		b.Wait("the dry run", `document.querySelector('dialog[open] .preview-count')`)
		fitsAndAxe(b, "operator acknowledge dialog")
		b.ClickText("dialog[open] button", "Acknowledge 1 row")
		b.Wait("the result", `document.querySelector('dialog[open] .result')?.textContent.includes('Acknowledged 1')`)
		b.ClickText("dialog[open] button", "Close")
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND status = 'acknowledged'`, prefix+"-b-%"); n != 1 {
			t.Errorf("%d rows acknowledged, want 1", n)
		}
		fitsAndAxe(b, "operator failures")
		b.Check()
	})

	t.Run("detail", func(t *testing.T) {
		b := b.In(t)
		pending := w.Int(t, `SELECT id FROM dlq_messages WHERE row_key LIKE ? AND status = 'pending' ORDER BY id LIMIT 1`, prefix+"-b-%")
		b.Do(chromedp.Navigate(fmt.Sprintf("%s/#/failures/%d", w.URL, pending)))
		b.Wait("the detail with its body", `document.querySelector('pre.payload')?.textContent.includes(`+fmt.Sprintf("%q", prefix)+`)`)
		wantButtons(t, b, "detail", map[string]string{"Replay": "enabled", "Acknowledge": "enabled", "Edit and replay": "enabled"})
		if Eval[bool](b, `!!document.querySelector('#detail-needs')`) {
			t.Errorf("an operator's detail names missing permissions: %s", textOf(b, "#detail-needs"))
		}
		fitsAndAxe(b, "operator detail")
		b.Check()
	})

	t.Run("overview and tasks", func(t *testing.T) {
		b := b.In(t)
		// An open breaker (the key refused): the reset is offered, and
		// disabled for an operator.
		now := time.Now()
		w.ExecDirect(t, fmt.Sprintf(`INSERT INTO enrichment_breaker(name, state, previous_state, failures, open_until, cause, updated_at)
			VALUES ('provider', 'open', 'closed', 0, %d, 'auth', %d) ON CONFLICT(name) DO UPDATE SET state = 'open', open_until = excluded.open_until,
			cause = 'auth', probe_until = NULL, updated_at = excluded.updated_at`, now.Add(time.Hour).UnixMilli(), now.UnixMilli()))
		t.Cleanup(func() {
			if r := w.Admin(t, http.MethodPost, "/admin/enrichment/breaker/reset", nil); r.Status != 200 {
				t.Errorf("reset the breaker: %d %s", r.Status, r.Raw)
			}
		})
		b.Do(chromedp.Navigate(w.URL + "/#/"))
		b.Wait("the overview", `document.querySelectorAll('.card-value').length === 6 && document.querySelector('.breaker-state')`)
		wantContains(t, "the breaker panel", textOf(b, "section[aria-labelledby=h-breaker]"), "Provider circuit breaker open", "Open since",
			"because the provider refused the API key", "Next probe at")
		wantButtons(t, b, "overview", map[string]string{"Close the breaker…": "disabled"})
		wantContains(t, "the breaker's reason", textOf(b, "#breaker-needs"), "needs the breaker permission", "Your role is operator")
		if got := navLinks(b); strings.Contains(got, "Keys") {
			t.Errorf("an operator's navigation offers Keys: %s", got)
		}
		// Forced, the breaker's reset is refused (403) in place; the tab stays signed in.
		Eval[bool](b, `(() => { const e = [...document.querySelectorAll('main button')].find(x => x.textContent.trim() === 'Close the breaker…'); e.disabled = false; e.click(); return true })()`)
		b.ClickText("main button", "Yes, close it")
		b.Wait("the refusal", `document.querySelector('section[aria-labelledby=h-breaker] .error')?.textContent.includes('lacks the breaker permission')`)
		stillSignedIn(t, b, token)
		fitsAndAxe(b, "operator overview refused breaker")

		b.Do(chromedp.Navigate(w.URL + "/#/tasks"))
		b.Wait("the tasks", `document.querySelector('tbody tr progress')`)
		wantButtons(t, b, "tasks", map[string]string{"Pause": "enabled", "Cancel": "enabled"})
		if Eval[bool](b, `!!document.querySelector('#tasks-needs')`) {
			t.Error("an operator is told it may not act on tasks")
		}
		fitsAndAxe(b, "operator tasks")
		b.CheckCSP("operator")
		b.Check()
	})
}

var tokenPattern = regexp.MustCompile(`^rdk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$`)

func TestConsoleRolesAdmin(t *testing.T) {
	chromiumPath(t)
	w := shared
	prefix := newPrefix("radm")
	name := prefix + "-admin"
	token := newKey(t, w, name, "admin")
	b := rolesBrowser(t)
	signInWithKey(b.In(t), w, token, "key:"+name, "admin")
	bob := prefix + "-bob"
	var bobToken string

	t.Run("overview", func(t *testing.T) {
		b := b.In(t)
		b.Wait("the overview", `document.querySelectorAll('.card-value').length === 6 && document.querySelector('#h-breaker')`)
		if got := navLinks(b); !strings.Contains(got, "Keys") {
			t.Errorf("an admin's navigation lacks Keys: %s", got)
		}
		wantButtons(t, b, "overview", map[string]string{"Close the breaker…": "missing"}) // closed: nothing to reset
		if Eval[bool](b, `!!document.querySelector('main .needs')`) {
			t.Errorf("an admin is told of missing permissions: %s", textOf(b, "main .needs"))
		}
		b.Check()
	})

	t.Run("create a key", func(t *testing.T) {
		b := b.In(t)
		b.ClickText("header nav a", "Keys")
		b.Wait("the keys list", fmt.Sprintf(`[...document.querySelectorAll('table.keylist tbody th')].some(c => c.textContent === %q)`, name))
		fitsAndAxe(b, "admin keys")
		b.Type("form.create-key input[name=name]", bob)
		b.Select("form.create-key select[name=role]", "operator")
		b.Click(`form.create-key input[name=pipelines][value=orders]`)
		Eval[bool](b, `(() => { const e = document.querySelector('form.create-key input[name=expires]'); e.value = '2099-01-02T03:04';
			e.dispatchEvent(new Event('input', {bubbles: true})); return true })()`)
		b.ClickText("form.create-key button", "Create key")
		b.Wait("the new token", `document.querySelector('.new-token code.token')`)
		bobToken = textOf(b, ".new-token code.token")
		if !tokenPattern.MatchString(bobToken) {
			t.Fatalf("the token shown is %q", bobToken)
		}
		wantContains(t, "the new key's note", textOf(b, ".new-token"), "shown this once", "Key "+bob+" created")
		wantButtons(t, b, "the new key", map[string]string{"Copy the token": "enabled", "Done, hide it": "enabled"})
		fitsAndAxe(b, "admin key created")
		// The key is what the form said.
		r, err := w.Do(http.MethodGet, "/admin/whoami", nil, map[string]string{"Authorization": "Bearer " + bobToken})
		if err != nil || r.Status != 200 || !strings.Contains(string(r.Raw), `"principal":"key:`+bob+`","role":"operator","pipelines":["orders"]`) {
			t.Errorf("the new key's whoami: %v %s", err, r.Raw)
		}
		row := fmt.Sprintf(`[...document.querySelectorAll('table.keylist tbody tr')].find(r => r.cells[0].textContent === %q)`, bob)
		b.Wait("the new key listed", row)
		wantContains(t, "the new key's row", Eval[string](b, row+`.innerText`), "operator", "orders", "key:"+name, "2099", "never")
		// Shown once: hidden, and gone after a reload.
		b.ClickText("main button", "Done, hide it")
		b.Wait("the token hidden", `!document.querySelector('.new-token')`)
		b.Do(chromedp.Reload())
		b.Wait("the keys list again", row)
		if strings.Contains(b.Text(), bobToken) || strings.Contains(Eval[string](b, `JSON.stringify(sessionStorage)`), bobToken) {
			t.Error("the token is still on the page or in storage")
		}
		b.Check()
	})

	t.Run("revoke a key", func(t *testing.T) {
		b := b.In(t)
		if bobToken == "" {
			t.Skip("no key created")
		}
		row := fmt.Sprintf(`[...document.querySelectorAll('table.keylist tbody tr')].find(r => r.cells[0].textContent === %q)`, bob)
		Eval[bool](b, row+`.querySelector('button').click() || true`)
		b.Wait("the confirmation", `document.querySelector('dialog[open]')?.textContent.includes('Revoke the key `+bob+`?')`)
		if r, _ := w.Do(http.MethodGet, "/admin/whoami", nil, map[string]string{"Authorization": "Bearer " + bobToken}); r == nil || r.Status != 200 {
			t.Fatal("the key was revoked before the confirmation")
		}
		fitsAndAxe(b, "admin revoke dialog")
		b.ClickText("dialog[open] button", "Revoke")
		b.Wait("revoked", `!document.querySelector('dialog[open]') && document.querySelector('main [role=status]')?.textContent.includes('revoked') && `+
			row+`.classList.contains('revoked') && !`+row+`.querySelector('button')`)
		wantContains(t, "the revoked key's row", Eval[string](b, row+`.innerText`), "by key:"+name)
		r, err := w.Do(http.MethodGet, "/admin/whoami", nil, map[string]string{"Authorization": "Bearer " + bobToken})
		if err != nil || r.Status != http.StatusUnauthorized || r.Error == nil || r.Error.Code != "KEY_REVOKED" {
			t.Errorf("the revoked key's whoami: %v %+v", err, r)
		}
		fitsAndAxe(b, "admin keys after revoke")
		b.Check()
	})

	t.Run("revoking its own key signs the tab out", func(t *testing.T) {
		b := b.In(t)
		row := fmt.Sprintf(`[...document.querySelectorAll('table.keylist tbody tr')].find(r => r.cells[0].textContent === %q)`, name)
		b.Wait("its own key", row+`?.querySelector('button')`)
		Eval[bool](b, row+`.querySelector('button').click() || true`)
		b.Wait("the warning", `document.querySelector('dialog[open] .warn')?.textContent.includes('signs out')`)
		b.ClickText("dialog[open] button", "Revoke")
		// The list's reload is refused (401 KEY_REVOKED): signed out, saying why.
		b.Wait("signed out", `document.querySelector('#signin-error')?.textContent.includes('This key has been revoked')`)
		if got := Eval[string](b, `String(sessionStorage.getItem('redrive.token'))`); got != "null" {
			t.Errorf("the revoked token is still kept: %s", got)
		}
		fitsAndAxe(b, "signed out by a revoked key")
		b.CheckCSP("admin")
		b.Check()
	})
}

func TestConsoleRolesScoped(t *testing.T) {
	chromiumPath(t)
	w := shared
	prefix := newPrefix("rscope")
	now := time.Now().UnixMilli()
	w.Exec(t, seedSQL(prefix+"o", 2, 1, now, "e2e-orders"))
	w.Exec(t, seedSQL(prefix+"b", 2, 1, now, "beer-enrichment"))
	name := prefix + "-orders"
	token := newKey(t, w, name, "operator", "orders")
	b := rolesBrowser(t)
	signInWithKey(b.In(t), w, token, "key:"+name, "operator")

	t.Run("overview", func(t *testing.T) {
		b := b.In(t)
		b.Wait("the overview", `document.querySelectorAll('.card-value').length === 6`)
		wantContains(t, "the header", textOf(b, "#who"), "limited to orders")
		if Eval[bool](b, `!!document.querySelector('header select[name=pipeline]')`) {
			t.Error("a key of one pipeline is offered a pipeline selector")
		}
		wantContains(t, "the overview's note", b.Text(), "Alerts, scheduled jobs, queue backlogs and the provider's circuit breaker are not available to a key limited to pipelines")
		if Eval[bool](b, `!!document.querySelector('#h-alerts, #h-jobs, #h-breaker, main .error')`) {
			t.Errorf("the overview shows a panel of every pipeline or an error: %s", b.Text())
		}
		stillSignedIn(t, b, token)
		fitsAndAxe(b, "scoped overview")
		b.Check()
	})

	t.Run("failures", func(t *testing.T) {
		b := b.In(t)
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + prefix))
		b.Wait("the orders rows only", failuresRows+`.length === 2 && !document.querySelector('main .error')`)
		if got := Eval[string](b, `[...document.querySelectorAll('table.rows tbody tr')].map(r => r.textContent).join(' ')`); strings.Contains(got, prefix+"b") || !strings.Contains(got, prefix+"o") {
			t.Errorf("a key of orders lists %q", got)
		}
		wantButtons(t, b, "failures", map[string]string{"Replay all matching": "enabled", "Replay task…": "enabled"})
		fitsAndAxe(b, "scoped failures")
		for _, p := range []string{"#/groups", "#/tasks", "#/audit"} {
			b.Do(chromedp.Navigate(w.URL + "/" + p))
			b.Wait(p, `!document.querySelector('[aria-busy=true]') && document.querySelector('main table, main p.muted')`)
			if Eval[bool](b, `!!document.querySelector('main .error')`) {
				t.Errorf("%s: %s", p, textOf(b, "main .error"))
			}
		}
		b.Do(chromedp.Navigate(w.URL + "/#/keys"))
		b.Wait("the keys page's message", `document.querySelector('main .needs')`)
		if got := navLinks(b); strings.Contains(got, "Keys") {
			t.Errorf("a scoped operator's navigation offers Keys: %s", got)
		}
		stillSignedIn(t, b, token)
		b.Check()
	})

	t.Run("several pipelines", func(t *testing.T) {
		b := b.In(t)
		two := prefix + "-two"
		twoToken := newKey(t, w, two, "viewer", "beers", "orders")
		b.ClickText("header button", "Sign out")
		signInWithKey(b, w, twoToken, "key:"+two, "viewer")
		b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + prefix))
		// One of its pipelines is selected: no read names none (PIPELINE_REQUIRED).
		b.Wait("the selected pipeline's rows", `document.querySelector('header select[name=pipeline]')?.value && `+failuresRows+`.length === 2`)
		if got := Eval[string](b, `(() => { const s = document.querySelector('header select[name=pipeline]'); return s.value + '|' + [...s.options].map(o => o.value).join(',') })()`); got != "beers|beers,orders" {
			t.Errorf("the selector of a key of beers and orders: %q", got)
		}
		if Eval[bool](b, `!!document.querySelector('main .error')`) {
			t.Errorf("the failures page: %s", textOf(b, "main .error"))
		}
		fitsAndAxe(b, "two pipelines failures")
		b.Select("header select[name=pipeline]", "orders")
		b.Wait("the orders rows", `location.hash.includes('pipeline=orders') && `+failuresRows+`.length === 2 && [...`+failuresRows+`].every(r => r.textContent.includes('`+prefix+`o'))`)
		for _, p := range []string{"#/", "#/groups", "#/tasks"} {
			b.Do(chromedp.Navigate(w.URL + "/" + p))
			b.Wait(p, `!document.querySelector('[aria-busy=true]') && document.querySelector('main table, main p.muted, .card-value')`)
			if Eval[bool](b, `!!document.querySelector('main .error')`) {
				t.Errorf("%s: %s", p, textOf(b, "main .error"))
			}
		}
		fitsAndAxe(b, "two pipelines tasks")
		stillSignedIn(t, b, twoToken)
		b.CheckCSP("scoped")
		b.Check()
	})
}
