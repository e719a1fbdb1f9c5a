package dev.loupe.agent.latency;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Test targets built by the tests: a C program (gcc) and a Go program (Debian's golang-1.19). */
final class TestBinaries {
    static final Path GO = Path.of("/usr/lib/go-1.19/bin/go");

    /** work() sleeps 1.1 or 5 ms on each call; tail() only tail-calls; "c-target N [SECONDS [HOLD]]" first waits SECONDS, then calls work() N times and prints "calls N" and "sum_ns S", then waits HOLD seconds. */
    static final String C_SOURCE = """
            #include <stdio.h>
            #include <stdlib.h>
            #include <time.h>
            static long long now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
            __attribute__((noinline)) int work(long ns) { struct timespec t = {0, ns}; while (nanosleep(&t, &t)) {} return (int)(ns & 7); }
            __attribute__((noinline)) int tail(long ns) { return work(ns + 1); }
            int main(int argc, char **argv) {
                int n = atoi(argv[1]); long long sum = 0; volatile int sink = 0;
                if (argc > 2) { struct timespec t = {atol(argv[2]), 0}; nanosleep(&t, 0); }
                for (int i = 0; i < n; i++) { long long t0 = now_ns(); sink += work(i % 2 ? 5000000L : 1100000L); sum += now_ns() - t0; }
                printf("calls %d\\nsum_ns %lld\\n", n, sum);
                fflush(stdout);
                if (argc > 3) { struct timespec t = {atol(argv[3]), 0}; nanosleep(&t, 0); }
                return sink < 0;
            }
            """;

    static final String GO_SOURCE = """
            package main

            import "time"

            //go:noinline
            func work(i int) int {
            	time.Sleep(time.Millisecond)
            	if i%2 == 0 {
            		return i + 1
            	}
            	return i - 1
            }

            //go:noinline
            func other(i int) int { return i * 3 }

            func main() {
            	s := 0
            	for i := 0; i < 3; i++ {
            		s += work(i) + other(i)
            	}
            	println(s)
            }
            """;

    /**
     * "go-many N EACH": N goroutines and the main goroutine each call caller(), which calls work() EACH
     * times; prints "calls C", "goroutines N" and "goids MAIN G1 G2 ..." (each caller's goroutine id as the
     * runtime numbers it: the first line of its stack trace reads "goroutine ID [running]:"), then runs until
     * stdin is closed (so it can be symbolized).
     */
    static final String GO_MANY_SOURCE = """
            package main

            import (
            	"fmt"
            	"os"
            	"runtime"
            	"strconv"
            	"strings"
            	"sync"
            	"time"
            )

            func goid() string {
            	var b [64]byte
            	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
            	if f[0] != "goroutine" {
            		panic("no goroutine id in " + string(b[:]))
            	}
            	return f[1]
            }

            //go:noinline
            func work(i int) int {
            	time.Sleep(200 * time.Microsecond)
            	return i + 1
            }

            //go:noinline
            func caller(each int) int {
            	s := 0
            	for j := 0; j < each; j++ {
            		s += work(j)
            	}
            	return s
            }

            func main() {
            	n, _ := strconv.Atoi(os.Args[1])
            	each, _ := strconv.Atoi(os.Args[2])
            	goids := make([]string, n+1)
            	var wg sync.WaitGroup
            	for g := 0; g < n; g++ {
            		g := g // captured, not passed: a go statement with arguments adds a wrapper frame to the stacks
            		wg.Add(1)
            		go func() {
            			defer wg.Done()
            			goids[g+1] = goid()
            			caller(each)
            		}()
            	}
            	wg.Wait()
            	goids[0] = goid()
            	caller(each)
            	fmt.Printf("calls %d\\ngoroutines %d\\ngoids %s\\n", (n+1)*each, n+1, strings.Join(goids, " "))
            	os.Stdout.Sync()
            	b := make([]byte, 1)
            	for {
            		if _, err := os.Stdin.Read(b); err != nil {
            			return
            		}
            	}
            }
            """;

    /**
     * "spin N": calls spin() N times with known durations: of every 20 calls, 12 near 50 µs, 7 near 300 µs and
     * 1 near 2 ms, each scaled by a fixed factor in [0.9, 1.1) (so each cluster spans several fine buckets, as
     * real latencies do). spin() busy-waits and measures itself with CLOCK_MONOTONIC from its first line to its
     * last, preemption included; prints "calls N", then "ns D" per call.
     */
    static final String SPIN_SOURCE = """
            #include <stdio.h>
            #include <stdlib.h>
            #include <time.h>
            static long long now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
            __attribute__((noinline)) long long spin(long long ns) {
                long long t0 = now_ns(), t;
                do { t = now_ns(); } while (t - t0 < ns);
                return t - t0;
            }
            static const long long base_us[20] = {50, 300, 50, 50, 300, 50, 2000, 50, 300, 50, 50, 300, 50, 50, 300, 50, 300, 50, 300, 50};
            int main(int argc, char **argv) {
                int n = atoi(argv[1]);
                long long *took = malloc(sizeof(long long) * n);
                for (int i = 0; i < n; i++) took[i] = spin(base_us[i % 20] * (900 + (i * 37) % 200));
                printf("calls %d\\n", n);
                for (int i = 0; i < n; i++) printf("ns %lld\\n", took[i]);
                return 0;
            }
            """;

    private TestBinaries() {}

    static Path buildSpin(Path dir) throws Exception {
        return compileC(dir, SPIN_SOURCE, "spin");
    }

    static Path buildGoMany(Path dir) throws Exception {
        Path src = dir.resolve("many").resolve("main.go");
        java.nio.file.Files.createDirectories(src.getParent());
        Files.writeString(src, GO_MANY_SOURCE);
        Path out = dir.resolve("go-many");
        Path cache = Path.of(System.getProperty("java.io.tmpdir"), "loupe-agent-test-gocache");
        run(src.getParent(), List.of(GO.toString(), "build", "-o", out.toString(), "main.go"),
                List.of("GO111MODULE=off", "GOCACHE=" + cache, "HOME=" + dir));
        return out;
    }

    /**
     * A C program with {@code functions} probe-able functions {@code many_0} … (each called once per round; rounds
     * from argv[1]), built as {@code name}; {@code build} goes into the code, so two builds have two build ids.
     */
    static Path buildManyFunctions(Path dir, String name, int functions, int build) throws Exception {
        StringBuilder src = new StringBuilder("#include <stdlib.h>\nvolatile long sink;\n");
        for (int i = 0; i < functions; i++) {
            src.append("__attribute__((noinline)) void many_").append(i).append("(void) { sink += ").append(i * 1000 + build)
                    .append("; __asm__ volatile(\"\"); }\n");
        }
        src.append("int main(int argc, char **argv) {\n  int rounds = argc > 1 ? atoi(argv[1]) : 1;\n  for (int r = 0; r < rounds; r++) {\n");
        for (int i = 0; i < functions; i++) {
            src.append("    many_").append(i).append("();\n");
        }
        return compileC(dir, src.append("  }\n  return 0;\n}\n").toString(), name);
    }

    static Path buildCWithFramePointers(Path dir) throws Exception {
        return compileC(dir, C_SOURCE, "c-fp", "-fno-omit-frame-pointer");
    }

    static Path buildC(Path dir) throws Exception {
        return compileC(dir, C_SOURCE, "c-target");
    }

    /** gcc -O2 {@code flags}: {@code source} written to NAME.c in {@code dir}, the binary to NAME. */
    private static Path compileC(Path dir, String source, String name, String... flags) throws Exception {
        Path src = dir.resolve(name + ".c");
        Files.writeString(src, source);
        Path out = dir.resolve(name);
        List<String> cmd = new ArrayList<>(List.of("gcc", "-O2"));
        cmd.addAll(List.of(flags));
        cmd.addAll(List.of(src.toString(), "-o", out.toString()));
        run(dir, cmd, List.of());
        return out;
    }

    static Path buildGo(Path dir) throws Exception {
        Path src = dir.resolve("main.go");
        Files.writeString(src, GO_SOURCE);
        Path out = dir.resolve("go-target");
        // A cache shared by test runs: building the runtime once takes most of a minute on a small machine.
        Path cache = Path.of(System.getProperty("java.io.tmpdir"), "loupe-agent-test-gocache");
        run(dir, List.of(GO.toString(), "build", "-o", out.toString(), "main.go"),
                List.of("GO111MODULE=off", "GOCACHE=" + cache, "HOME=" + dir));
        return out;
    }

    static String run(Path dir, List<String> cmd, List<String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(cmd)).directory(dir.toFile()).redirectErrorStream(true);
        for (String e : env) {
            int eq = e.indexOf('=');
            pb.environment().put(e.substring(0, eq), e.substring(eq + 1));
        }
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) {
            throw new IllegalStateException(cmd + " failed:\n" + out);
        }
        return out;
    }
}
