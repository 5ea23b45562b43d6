// goburn.go - a Go program that writes its own CPU profile (runtime/pprof),
// for tests/e2e/views.bats: pyprof must read Go's pprof files too (their
// ids, mappings, inlined lines). Usage: goburn OUT.pb.gz
package main

import (
	"os"
	"runtime/pprof"
	"time"
)

//go:noinline
func hot(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

//go:noinline
func warm(n int) int { return hot(n/3) + n }

func main() {
	f, _ := os.Create(os.Args[1])
	pprof.StartCPUProfile(f)
	end := time.Now().Add(1500 * time.Millisecond)
	s := 0
	for time.Now().Before(end) {
		s += hot(100000) + warm(100000)
	}
	pprof.StopCPUProfile()
	f.Close()
	if s == 42 {
		println(s)
	}
}
