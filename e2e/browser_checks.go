//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// axeSource is node_modules/axe-core/axe.min.js (pinned in package.json).
var axeSource = sync.OnceValues(func() (string, error) {
	root, err := sqlitetest.Root()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, "node_modules", "axe-core", "axe.min.js"))
	return string(b), err
})

// Axe runs axe-core over the page as it is now (every rule axe runs by
// default, best practices included) and fails the test on any violation,
// of any impact. axe is injected by DevTools evaluation, which the page's
// CSP does not govern; a CSP violation it caused anyway would be recorded
// by WatchCSP and fail CheckCSP.
func (b *Browser) Axe(what string) {
	b.t.Helper()
	src, err := axeSource()
	if err != nil {
		b.t.Fatalf("axe-core (npm ci): %v", err)
	}
	if !Eval[bool](b, `typeof window.axe === 'object'`) {
		Eval[bool](b, src+"\n;true")
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(r.violations.map(v =>
		({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + n.failureSummary)}))))`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("axe on %s: %v", what, err)
	}
	var vs []struct {
		ID, Impact, Help string
		Nodes            []string
	}
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		b.t.Fatalf("axe on %s: %v: %s", what, err, out)
	}
	for _, v := range vs {
		b.t.Errorf("axe on %s: %s (%s): %s\n  %s", what, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n  "))
	}
}

// watchCSPJS records the document's Content-Security-Policy violations in window.__csp.
const watchCSPJS = `window.__csp = []; document.addEventListener('securitypolicyviolation',
	e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || '')));`

// WatchCSP records every Content-Security-Policy violation of each page the
// tab loads from now on (a script DevTools runs first in every new
// document) in window.__csp; CheckCSP fails on any.
func (b *Browser) WatchCSP() {
	b.t.Helper()
	b.Do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchCSPJS})
		return err
	}))
}

// CheckCSP fails the test if the page recorded a CSP violation since WatchCSP.
func (b *Browser) CheckCSP(what string) {
	b.t.Helper()
	if v := Eval[[]string](b, `window.__csp || []`); len(v) > 0 {
		b.t.Errorf("%s: CSP violations: %v", what, v)
	}
}

// layoutJS lists what does not fit on the page as it is now: the page
// wider than the window (scrolls sideways), a table wider than its box (a
// column clipped or scrolled out of sight), a visible cell whose content
// overflows it or that reaches past the window's edge, a time or a task's
// progress text broken over lines, an open dialog wider than itself.
const layoutJS = `(() => {
	const out = [];
	const W = document.documentElement.clientWidth;
	const sw = document.documentElement.scrollWidth;
	if (sw > W) out.push('the page is ' + sw + ' px wide in a ' + W + ' px window');
	const name = (e) => JSON.stringify(e.textContent.trim().replace(/\s+/g, ' ').slice(0, 40));
	for (const box of document.querySelectorAll('.scroll')) {
		if (box.scrollWidth > box.clientWidth + 1) out.push('table ' + JSON.stringify(box.getAttribute('aria-label')) + ' is ' + (box.scrollWidth - box.clientWidth) + ' px wider than its box');
	}
	for (const c of document.querySelectorAll('td, th')) {
		if (!c.getClientRects().length) continue;
		const head = c.closest('thead');
		if (head && getComputedStyle(head).position === 'absolute') continue;
		if (c.scrollWidth > c.clientWidth + 1) out.push('cell ' + name(c) + ' is clipped: ' + c.scrollWidth + ' px of content in ' + c.clientWidth);
		const r = c.getBoundingClientRect();
		if (r.right > W + 0.5 && !c.closest('.scroll')) out.push('cell ' + name(c) + ' reaches past the window (' + Math.round(r.right) + ' px)');
	}
	for (const t of document.querySelectorAll('time, .progress-text')) {
		if (t.getClientRects().length > 1) out.push(name(t) + ' breaks over lines');
	}
	for (const d of document.querySelectorAll('dialog[open]')) {
		if (d.scrollWidth > d.clientWidth + 1) out.push('the dialog is ' + (d.scrollWidth - d.clientWidth) + ' px wider than itself');
	}
	return out;
})()`

// Layout fails the test for each thing layoutJS finds on the page.
func (b *Browser) Layout(what string) {
	b.t.Helper()
	for _, p := range Eval[[]string](b, layoutJS) {
		b.t.Errorf("layout of %s: %s", what, p)
	}
}
