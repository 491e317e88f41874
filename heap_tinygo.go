//go:build tinygo

package main

import (
	"runtime"
	_ "unsafe" // go:linkname
)

// growHeap is TinyGo's: it doubles the wasm memory and the heap with it.
//
//go:linkname growHeap runtime.growHeap
func growHeap() bool

// tinygoHeapBytes is the heap TinyGo starts with here. Its collector runs
// whenever the heap is full and grows it only while less than a third is
// free after a collection, so a heap sized to what is live collects every
// few hundred calls, and each collection marks the whole live heap and
// scans every block: three quarters of a D1-free call's CPU in a V8
// profile. With this much room a collection comes every several thousand
// calls. The pages are the runtime's fresh, zeroed memory (nothing is
// written at start), and the memory stays bounded: 32 MiB of the 128 MB an
// isolate may use.
const tinygoHeapBytes = 32 << 20

func init() {
	// One reading (ReadMemStats visits every block), then doublings.
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	for size := m.Sys; size > 0 && size < tinygoHeapBytes && growHeap(); size *= 2 {
	}
}
