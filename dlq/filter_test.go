package dlq

import (
	"errors"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// CheckLimit accepts 1..max, and its error names the setting that sets
// max when there is one, and no setting otherwise.
func TestCheckLimitNamesTheSetting(t *testing.T) {
	for _, n := range []int64{1, 100} {
		if err := CheckLimit(n, 100, "LIST_MAX"); err != nil {
			t.Errorf("%d: %v", n, err)
		}
	}
	for setting, want := range map[string]string{
		"LIST_MAX": "limit must be an integer in 1..100 (LIST_MAX)",
		"":         "limit must be an integer in 1..100",
	} {
		var in *InputError
		if err := CheckLimit(101, 100, setting); !errors.As(err, &in) || in.Code != "INVALID_LIMIT" || in.Message != want {
			t.Errorf("setting %q: %v, want %q", setting, err, want)
		}
	}
}

// A pipeline filter sets the source queue to the pipeline's queue; a
// source_queue given with it must be that queue, any other is INVALID_FILTER.
func TestPipelineFilterAndSourceQueueMustAgree(t *testing.T) {
	ps := withPipelines(t)
	for _, sq := range []string{"", "orders"} {
		f, err := Filter{Pipeline: "orders", SourceQueue: sq}.Normalize(ps)
		if err != nil || f.SourceQueue != "orders" {
			t.Errorf("source_queue %q: %+v %v, want source_queue orders", sq, f, err)
		}
	}
	_, err := Filter{Pipeline: "orders", SourceQueue: "beer-enrichment"}.Normalize(ps)
	wantInput(t, err, "INVALID_FILTER")
}

// The filter of every status without a beer_id names the four statuses, so
// a failed_at bound is four ranges of idx_dlq_status_failed, not a scan of
// every row (there is no index on failed_at alone).
func TestFilterOfEveryStatusReadsStatusRanges(t *testing.T) {
	db := sqlitetest.New(t)
	after := int64(1_700_000_000_000)
	f, err := Filter{Status: StatusAll, FailedAfter: &after}.Normalize(nil)
	if err != nil {
		t.Fatal(err)
	}
	where, args := f.Where()
	plan := strings.Join(sqlitetest.Plan(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE `+where, args...), "\n")
	if !strings.Contains(plan, "idx_dlq_status_failed") || strings.Contains(plan, "SCAN dlq_messages") {
		t.Fatalf("where %s\nplan:\n%s\nwant ranges of idx_dlq_status_failed", where, plan)
	}
}
