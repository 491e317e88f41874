package dlq

import (
	"errors"
	"testing"
)

// wantInput fails unless err is an *InputError with code.
func wantInput(t *testing.T, err error, code string) {
	t.Helper()
	var in *InputError
	if !errors.As(err, &in) || in.Code != code {
		t.Fatalf("err = %v, want input error %s", err, code)
	}
}
