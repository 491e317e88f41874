package platform

import "sync/atomic"

// (Not js/wasm only: plain Go, tested natively.)

// goPool runs calls on goroutines that stay for the next call. Every fetch
// call needs a goroutine of its own (it may wait for a JavaScript promise,
// which the event handler's goroutine must not). A new goroutine starts on
// a small stack and grows it by copying, several times per request: in
// wasm that was a seventh of a request's CPU time. A kept goroutine has
// grown its stack already.
type goPool struct {
	jobs chan func()
	// maxIdle bounds the goroutines kept waiting for a call.
	maxIdle int32
	idle    atomic.Int32
	// started and ended count the goroutines started and ended (for tests).
	started, ended atomic.Int32
}

func newGoPool(maxIdle int32) *goPool {
	return &goPool{jobs: make(chan func()), maxIdle: maxIdle}
}

// run calls fn on an idle goroutine of the pool, or on a new one when none
// is idle. It does not wait for fn.
func (p *goPool) run(fn func()) {
	select {
	case p.jobs <- fn:
	default:
		p.started.Add(1)
		go p.serve(fn)
	}
}

// serve calls fn, then every call handed to it while it is idle; it ends
// when maxIdle goroutines are idle already.
func (p *goPool) serve(fn func()) {
	for {
		fn()
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			p.ended.Add(1)
			return
		}
		fn = <-p.jobs
		p.idle.Add(-1)
	}
}
