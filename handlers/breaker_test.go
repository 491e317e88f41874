package handlers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redrive/redrive/access"
	"github.com/redrive/redrive/enrichment"
)

// An operator closes the breaker, whatever its state and cause; the reset
// is audited (breaker_reset) with the state it had; a query or a body with
// fields is a 400.
func TestBreakerResetClosesItAndIsAudited(t *testing.T) {
	api, _ := newDLQAPI(t)
	b := enrichment.Breaker{DB: api.DB, Threshold: 5, Cooldown: time.Hour}
	if _, _, err := b.Trip(context.Background(), api.Clock.Now(), enrichment.CauseAuth); err != nil {
		t.Fatal(err)
	}
	rec, env := do(api.Handler(), "POST", "/admin/enrichment/breaker/reset", "", adminHeaders)
	var data struct {
		Data struct {
			PreviousState string `json:"previous_state"`
			State         string `json:"state"`
		} `json:"data"`
	}
	if rec.Code != 200 || !env.Success || json.Unmarshal(rec.Body.Bytes(), &data) != nil || data.Data.PreviousState != "open" || data.Data.State != "closed" {
		t.Fatalf("reset: %d %s", rec.Code, rec.Body)
	}
	st, err := b.Read(context.Background())
	if err != nil || st.State != enrichment.BreakerClosed || st.Cause != "" || st.Reopens != 0 {
		t.Fatalf("breaker after reset: %+v %v", st, err)
	}
	var action, outcome, counts string
	if err := api.DB.QueryRow(`SELECT action, outcome, counts FROM admin_audit`).Scan(&action, &outcome, &counts); err != nil ||
		action != "breaker_reset" || outcome != "ok" || counts != `{"previous_state":"open"}` {
		t.Fatalf("audit: %s %s %s %v", action, outcome, counts, err)
	}
	// Again: nothing to close, still answered and audited.
	if rec, env := do(api.Handler(), "POST", "/admin/enrichment/breaker/reset", "{}", adminHeaders); rec.Code != 200 || !env.Success {
		t.Fatalf("second reset: %d %s", rec.Code, rec.Body)
	}
	for _, bad := range []struct{ path, body string }{
		{"/admin/enrichment/breaker/reset?force=1", ""},
		{"/admin/enrichment/breaker/reset", `{"force":true}`},
	} {
		if rec, env := do(api.Handler(), "POST", bad.path, bad.body, adminHeaders); rec.Code != 400 || env.Success {
			t.Errorf("%s %s: %d %s", bad.path, bad.body, rec.Code, rec.Body)
		}
	}
	if rec, _ := do(api.Handler(), "POST", "/admin/enrichment/breaker/reset", "", nil); rec.Code != 401 {
		t.Fatalf("without credentials: %d", rec.Code)
	}
}

// GET /admin/enrichment/breaker shows the breaker as it is: closed and
// never used; open after the threshold of transient failures (cause,
// count, since, the end of its cooldown); open because the provider
// refused the key; half-open with its probe's lease; a probe due once the
// cooldown has passed. A viewer reads it; a scoped key may not (the route
// matrix of scope_test.go).
func TestBreakerShowsStateCauseAndNextProbe(t *testing.T) {
	api, _ := newDLQAPI(t)
	now := time.UnixMilli(1_800_000_000_000)
	api.Clock = func() time.Time { return now }
	b := enrichment.Breaker{DB: api.DB, Threshold: 3, Cooldown: time.Minute, ProbeLease: 30 * time.Second}
	show := func(hdr map[string]string) (d breakerData) {
		t.Helper()
		rec, env := checkedDo(t, api, "GET", "/admin/enrichment/breaker", "", hdr)
		if rec.Code != 200 || dataInto(env, &d) != nil {
			t.Fatalf("breaker: %d %s", rec.Code, rec.Body)
		}
		return d
	}
	if d := show(adminHeaders); d.State != "closed" || d.Cause != nil || d.Since != nil || d.OpenUntil != nil || d.ProbeDue {
		t.Fatalf("never used: %+v", d)
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, _, err := b.Failed(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	d := show(adminHeaders)
	if d.State != "open" || d.Cause == nil || *d.Cause != "transient" || d.Failures != 3 || d.Since == nil || *d.Since != now.UnixMilli() ||
		d.OpenUntil == nil || *d.OpenUntil != now.Add(time.Minute).UnixMilli() || d.ProbeUntil != nil || d.ProbeDue {
		t.Fatalf("open after 3 failures: %+v", d)
	}
	now = now.Add(time.Minute)
	if d := show(adminHeaders); d.State != "open" || !d.ProbeDue {
		t.Fatalf("cooldown over: %+v", d)
	}
	if a, err := b.Admit(ctx, now); err != nil || !a.Probe {
		t.Fatalf("probe: %+v %v", a, err)
	}
	if d := show(adminHeaders); d.State != "half_open" || d.ProbeUntil == nil || *d.ProbeUntil != now.Add(30*time.Second).UnixMilli() || d.ProbeDue {
		t.Fatalf("half-open: %+v", d)
	}
	if _, _, err := b.Trip(ctx, now, enrichment.CauseAuth); err != nil {
		t.Fatal(err)
	}
	if d := show(adminHeaders); d.State != "open" || *d.Cause != "auth" || d.Reopens != 1 {
		t.Fatalf("refused key: %+v", d)
	}
	if _, err := b.Reset(ctx, now); err != nil {
		t.Fatal(err)
	}
	viewer := bearer(createKey(t, api, "viewer", access.Viewer))
	if d := show(viewer); d.State != "closed" || d.Cause != nil || d.Since == nil || d.Failures != 0 {
		t.Fatalf("after a reset: %+v", d)
	}
	if rec, _ := do(api.Handler(), "GET", "/admin/enrichment/breaker", "", nil); rec.Code != 401 {
		t.Fatalf("without credentials: %d", rec.Code)
	}
	if rec, env := do(api.Handler(), "GET", "/admin/enrichment/breaker?x=1", "", adminHeaders); rec.Code != 400 || env.Error.Code != "INVALID_REQUEST" {
		t.Fatalf("unknown parameter: %d %s", rec.Code, rec.Body)
	}
}
