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
