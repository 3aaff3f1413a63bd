package testkit

import "runtime"

// LiveHeap is the heap in use after collecting garbage twice: what is
// retained. Memory tests compare it before and after, with a generous bound.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapAlloc
}
