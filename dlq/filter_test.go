package dlq

import (
	"errors"
	"testing"
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
	withPipelines(t)
	for _, sq := range []string{"", "orders"} {
		f, err := Filter{Pipeline: "orders", SourceQueue: sq}.Normalize()
		if err != nil || f.SourceQueue != "orders" {
			t.Errorf("source_queue %q: %+v %v, want source_queue orders", sq, f, err)
		}
	}
	_, err := Filter{Pipeline: "orders", SourceQueue: "beer-enrichment"}.Normalize()
	wantInput(t, err, "INVALID_FILTER")
}
