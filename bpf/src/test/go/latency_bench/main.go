// Benchmark target: calls tiny() N times in a tight loop and prints the mean nanoseconds per call.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func tiny(x int) int { return x*3 + 1 }

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	s := 0
	start := time.Now()
	for i := 0; i < n; i++ {
		s += tiny(i)
	}
	fmt.Printf("ns_per_call %.1f\n", float64(time.Since(start).Nanoseconds())/float64(n))
	fmt.Fprintf(os.Stderr, "sink %d\n", s)
}
