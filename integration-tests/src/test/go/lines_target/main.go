// The source-lines target (issue 28): main.hot's loop is the hot code, mix is inlined into it. Line numbers are
// asserted by SourceLinesProfileTest: keep them (LOOP_LINE, CALL_LINE, MIX_LINE there) in step with this file.
package main

var sink int

//go:noinline
func hot(n int) int {
	s := 0
	for i := 0; i < n; i++ { // LOOP_LINE = 10
		s += mix(i) // CALL_LINE = 11
	}
	return s
}

func mix(i int) int {
	return i*i ^ (i >> 3) // MIX_LINE = 17
}

func main() {
	for {
		sink += hot(1 << 20)
	}
}
