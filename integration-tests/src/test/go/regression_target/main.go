// Regression test target: calls work() at a steady rate until killed. How long work() takes is fixed when the
// binary is built, as a deploy fixes it:
//
//	go build -ldflags "-X main.workMicros=6000 -X main.release=r2" -o regression_target main.go
//
// so a slower or an equally fast release is another binary with another Go build id. work() sleeps rather than
// spins: the agent measures wall time from entry to return, and on a small shared machine a spinning call is
// stretched by every preemption (a 6 ms spin at 300 calls/s would also need 1.8 CPUs), while a sleeping call
// waits on a timer and is only late by its wake-up.
//
//	regression_target [CALLS_PER_SECOND]   (default 300)
//
// Prints "release R work_us W rate N" once started, "first_call_unix_ns T" when the first call begins, then,
// every second, "calls C mean_us M" for that second.
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var (
	workMicros = "2000" // -X: how long each call to work() takes
	release    = "dev"  // -X: a name for the build; another value alone is enough to make another build id
)

// Calls run on this many goroutines, each at an equal share of the rate, so a slow build keeps the rate.
const callers = 8

//go:noinline
func work(d time.Duration) int {
	time.Sleep(d)
	return int(d & 1)
}

func main() {
	rate := 300
	if len(os.Args) > 1 {
		r, err := strconv.Atoi(os.Args[1])
		if err != nil || r < callers {
			fmt.Fprintf(os.Stderr, "calls per second must be a whole number >= %d: %s\n", callers, os.Args[1])
			os.Exit(2)
		}
		rate = r
	}
	us, err := strconv.Atoi(workMicros)
	if err != nil || us <= 0 {
		fmt.Fprintf(os.Stderr, "built with a bad main.workMicros: %q\n", workMicros)
		os.Exit(2)
	}
	d := time.Duration(us) * time.Microsecond
	fmt.Printf("release %s work_us %d rate %d\n", release, us, rate)
	var calls, nanos int64
	var first sync.Once
	period := time.Second * callers / time.Duration(rate)
	for i := 0; i < callers; i++ {
		go func(offset time.Duration) {
			time.Sleep(offset) // spread the callers over one period
			t := time.NewTicker(period)
			for range t.C {
				start := time.Now()
				first.Do(func() { fmt.Printf("first_call_unix_ns %d\n", start.UnixNano()) })
				work(d)
				atomic.AddInt64(&nanos, int64(time.Since(start)))
				atomic.AddInt64(&calls, 1)
			}
		}(period * time.Duration(i) / callers)
	}
	for range time.Tick(time.Second) {
		c, n := atomic.SwapInt64(&calls, 0), atomic.SwapInt64(&nanos, 0)
		if c > 0 {
			fmt.Printf("calls %d mean_us %d\n", c, n/c/1000)
		}
	}
}
