package version

import "testing"

func TestStamp(t *testing.T) {
	if got := (Info{ID: "6f1c", Tag: "v2", Build: "abc"}).Stamp(); got != "6f1c" {
		t.Errorf("with an id: %q", got)
	}
	if got := (Info{Build: "abc-dirty"}).Stamp(); got != "abc-dirty" {
		t.Errorf("without an id: %q", got)
	}
}
