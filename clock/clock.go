// Package clock is redrive's one source of the current time. Every type
// that reads the time holds a Clock, which tests set to a fixed or stepping
// time; the zero value is the wall clock.
package clock

import "time"

// Clock returns the current time; nil means time.Now.
type Clock func() time.Time

// Now returns c's time, or time.Now() when c is nil.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}
