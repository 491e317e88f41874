package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// TestJobListLastErrorNullOnlyWhenTheRunSucceeded: last_error is scanned
// straight into the pointer field, so a run without an error reads back as
// null and a failed run as its text, and each row starts from nil.
func TestJobListLastErrorNullOnlyWhenTheRunSucceeded(t *testing.T) {
	ctx := context.Background()
	j := JobRuns{DB: sqlitetest.New(t)}
	at := time.UnixMilli(1_700_000_000_000)
	if err := j.RecordRun(ctx, "a_failed", at, time.Second, errors.New("d1 unavailable"), nil); err != nil {
		t.Fatal(err)
	}
	if err := j.RecordRun(ctx, "b_ok", at, time.Second, nil, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	got, err := j.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Jobs) != 2 {
		t.Fatalf("jobs = %d, want 2", len(got.Jobs))
	}
	failed, ok := got.Jobs[0], got.Jobs[1]
	if failed.LastError == nil || *failed.LastError != "d1 unavailable" || failed.LastOK {
		t.Errorf("failed job: last_error %v, last_ok %v", failed.LastError, failed.LastOK)
	}
	if ok.LastError != nil || !ok.LastOK || string(ok.LastSummary) != `{"n":1}` {
		t.Errorf("ok job: last_error %v, last_ok %v, summary %s", ok.LastError, ok.LastOK, ok.LastSummary)
	}
}
