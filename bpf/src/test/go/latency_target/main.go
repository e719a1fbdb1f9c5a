// Latency test target: many goroutines call work(), which blocks for one of two known durations, has two
// return paths and a 32 KiB frame, so a goroutine's first call grows its stack in the prologue (the entry
// runs twice). The target measures every call itself and prints its ground truth:
//
//	latency_target work GOROUTINES EACH
//	latency_target rec GOROUTINES EACH   (recurse(): 4 nested levels of about 1.2, 5, 20 and 70 ms, each
//	                                      level's 6 KiB frame growing the stack on the way down)
//
//
//	calls N
//	sum_ns S
//	path short|long count C sum_ns S
//	bucket K C      (the same 2^k microsecond buckets as Loupe)
//	goids G1 G2 ... (the goroutines that called the function, in the runtime's own numbering)
package main

import (
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	shortSleep = 2100 * time.Microsecond
	longSleep  = 20 * time.Millisecond
)

//go:noinline
func touch(b []byte, i int) int {
	b[i%len(b)] = byte(i)
	b[(i*7919)%len(b)]++
	return int(b[i%len(b)])
}

//go:noinline
func work(i int, long bool) int {
	var buf [32 << 10]byte
	n := touch(buf[:], i)
	if long {
		time.Sleep(longSleep)
		return n + int(buf[(i*31)%len(buf)]) + 1
	}
	time.Sleep(shortSleep)
	return n - int(buf[(i*17)%len(buf)])
}

var recSleep = [4]time.Duration{50 * time.Millisecond, 15 * time.Millisecond, 3800 * time.Microsecond, 1200 * time.Microsecond}

//go:noinline
func recurse(level int, rec func(int64)) int {
	var buf [6 << 10]byte
	n := touch(buf[:], level)
	time.Sleep(recSleep[level])
	if level == 3 {
		return n
	}
	start := time.Now()
	r := recurse(level+1, rec)
	rec(time.Since(start).Nanoseconds())
	return n + r + int(buf[level*13])
}

// goid is the calling goroutine's id as the runtime prints it: the first line of its stack trace reads
// "goroutine N [running]:".
func goid() int64 {
	var b [64]byte
	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
	id, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || f[0] != "goroutine" {
		panic("no goroutine id in " + string(b[:]))
	}
	return id
}

func printGoids(goids []int64) {
	s := make([]string, len(goids))
	for i, id := range goids {
		s[i] = strconv.FormatInt(id, 10)
	}
	fmt.Printf("goids %s\n", strings.Join(s, " "))
}

func bucketOf(ns int64) int {
	us := (ns + 999) / 1000
	if us <= 1 {
		return 0
	}
	k := bits.Len64(uint64(us - 1))
	if k > 31 {
		k = 31
	}
	return k
}

func main() {
	goroutines, _ := strconv.Atoi(os.Args[2])
	each, _ := strconv.Atoi(os.Args[3])
	var count, sum [2]int64
	var hist [32]int64
	goids := make([]int64, goroutines)
	if os.Args[1] == "rec" {
		record := func(d int64) {
			atomic.AddInt64(&count[0], 1)
			atomic.AddInt64(&sum[0], d)
			atomic.AddInt64(&hist[bucketOf(d)], 1)
		}
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			g := g // captured, not passed: a go statement with arguments adds a wrapper frame to the stacks
			wg.Add(1)
			go func() {
				defer wg.Done()
				goids[g] = goid()
				for j := 0; j < each; j++ {
					start := time.Now()
					recurse(0, record)
					record(time.Since(start).Nanoseconds())
				}
			}()
		}
		wg.Wait()
		fmt.Printf("calls %d\nsum_ns %d\n", count[0], sum[0])
		for k, n := range hist {
			if n > 0 {
				fmt.Printf("bucket %d %d\n", k, n)
			}
		}
		printGoids(goids)
		return
	}
	var sink int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			goids[g] = goid()
			for j := 0; j < each; j++ {
				long := (g+j)%2 == 1
				start := time.Now()
				r := work(g*each+j, long)
				d := time.Since(start).Nanoseconds()
				p := 0
				if long {
					p = 1
				}
				atomic.AddInt64(&count[p], 1)
				atomic.AddInt64(&sum[p], d)
				atomic.AddInt64(&hist[bucketOf(d)], 1)
				atomic.AddInt64(&sink, int64(r))
			}
		}(g)
	}
	wg.Wait()
	fmt.Printf("calls %d\n", count[0]+count[1])
	fmt.Printf("sum_ns %d\n", sum[0]+sum[1])
	fmt.Printf("path short count %d sum_ns %d\n", count[0], sum[0])
	fmt.Printf("path long count %d sum_ns %d\n", count[1], sum[1])
	for k, n := range hist {
		if n > 0 {
			fmt.Printf("bucket %d %d\n", k, n)
		}
	}
	printGoids(goids)
	fmt.Fprintf(os.Stderr, "sink %d\n", sink)
}
