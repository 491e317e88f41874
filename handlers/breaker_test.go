package handlers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

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
