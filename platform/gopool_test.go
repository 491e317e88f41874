package platform

import (
	"sync"
	"testing"
	"time"
)

// waitIdle polls until n goroutines of p are idle.
func waitIdle(t *testing.T, p *goPool, n int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.idle.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("idle %d, want %d", p.idle.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGoPoolReusesAnIdleGoroutine(t *testing.T) {
	p := newGoPool(4)
	for i := 0; i < 5; i++ {
		done := make(chan struct{})
		p.run(func() { close(done) })
		<-done
		waitIdle(t, p, 1)
	}
	if got := p.started.Load(); got != 1 {
		t.Errorf("%d goroutines started for 5 calls one after another, want 1", got)
	}
}

func TestGoPoolRunsConcurrentCallsAndKeepsAtMostMaxIdle(t *testing.T) {
	p := newGoPool(3)
	const n = 10
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		p.run(func() { wg.Done(); <-release })
	}
	wg.Wait() // all n run at once: none waited for another
	if got := p.started.Load(); got != n {
		t.Errorf("%d goroutines for %d concurrent calls", got, n)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for p.ended.Load() != n-3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines ended, want %d (idle %d)", p.ended.Load(), n-3, p.idle.Load())
		}
		time.Sleep(time.Millisecond)
	}
	waitIdle(t, p, 3)
	done := make(chan struct{})
	p.run(func() { close(done) })
	<-done
	if got := p.started.Load(); got != n {
		t.Errorf("a call with idle goroutines started a new one (%d started)", got)
	}
}
