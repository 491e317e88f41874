package clock

import (
	"testing"
	"time"
)

func TestNilIsTheWallClockAndASetClockIsUsed(t *testing.T) {
	var wall Clock
	before := time.Now()
	if got := wall.Now(); got.Before(before) || got.After(time.Now()) {
		t.Errorf("nil clock gave %v, not the wall clock's time", got)
	}
	fixed := time.UnixMilli(1_750_000_000_000)
	if got := Clock(func() time.Time { return fixed }).Now(); !got.Equal(fixed) {
		t.Errorf("set clock gave %v, want %v", got, fixed)
	}
}
