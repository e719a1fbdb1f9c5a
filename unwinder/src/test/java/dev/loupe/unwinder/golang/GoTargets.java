package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Builds Go test targets with Debian's golang-1.19 into a directory: normal, PIE and stripped PIE. */
final class GoTargets {
    static final Path GO = Path.of("/usr/lib/go-1.19/bin/go");

    /** Several return paths, a closure (with "wait", it then sleeps), methods on a pointer receiver, a goroutine: shapes probes meet. */
    static final String SOURCE = """
            package main

            import (
            	"fmt"
            	"os"
            	"strings"
            	"time"
            )

            type conn struct{ n int }

            //go:noinline
            func (c *conn) serve(s string) int {
            	if len(s) == 0 {
            		return -1
            	}
            	if strings.HasPrefix(s, "x") {
            		return c.n * 2
            	}
            	return c.n + len(s)
            }

            //go:noinline
            func work(n int) int {
            	s := 0
            	for i := 0; i < n; i++ {
            		s += i
            	}
            	return s
            }

            func main() {
            	c := &conn{n: len(os.Args)}
            	done := make(chan int)
            	go func() { done <- work(10) }()
            	fmt.Println(c.serve(os.Args[0]), <-done)
            	if len(os.Args) > 1 && os.Args[1] == "wait" {
            		time.Sleep(time.Hour) // stays mapped for symbolization tests
            	}
            }
            """;

    final Path normal;
    final Path pie;
    final Path strippedPie;

    private GoTargets(Path normal, Path pie, Path strippedPie) {
        this.normal = normal;
        this.pie = pie;
        this.strippedPie = strippedPie;
    }

    private static GoTargets shared;

    /** One build per test JVM (each takes seconds): a temporary directory removed when the JVM exits. */
    static synchronized GoTargets shared() throws Exception {
        if (shared == null) {
            Path dir = Files.createTempDirectory("loupe-go-targets");
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try (var files = Files.walk(dir)) {
                    files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
                } catch (java.io.IOException ignored) {
                    // best effort
                }
            }));
            shared = build(dir);
        }
        return shared;
    }

    static GoTargets build(Path dir) throws Exception {
        Path src = dir.resolve("main.go");
        Files.writeString(src, SOURCE);
        Path normal = go(dir, src, "target");
        Path pie = go(dir, src, "target-pie", "-buildmode=pie");
        Path spie = go(dir, src, "target-stripped-pie", "-buildmode=pie", "-ldflags=-s -w");
        return new GoTargets(normal, pie, spie);
    }

    private static Path go(Path dir, Path src, String name, String... flags) throws Exception {
        Path out = dir.resolve(name);
        List<String> cmd = new ArrayList<>(List.of("env", "GOCACHE=" + dir.resolve("gocache"), "GOPATH=" + dir.resolve("gopath"),
                "GO111MODULE=off", "CGO_ENABLED=0", GO.toString(), "build"));
        cmd.addAll(List.of(flags));
        cmd.addAll(List.of("-o", out.toString(), src.toString()));
        TestPrograms.run(cmd);
        return out;
    }

    /** {@code go tool nm} text symbols (T/t): name → address. */
    static java.util.Map<String, Long> nmText(Path binary) throws Exception {
        java.util.Map<String, Long> out = new java.util.HashMap<>();
        for (String line : TestPrograms.run(List.of(GO.toString(), "tool", "nm", binary.toString())).split("\n")) {
            String[] f = line.trim().split("\\s+", 3);
            if (f.length == 3 && (f[1].equals("T") || f[1].equals("t"))) {
                out.put(f[2], Long.parseUnsignedLong(f[0], 16));
            }
        }
        return out;
    }
}
