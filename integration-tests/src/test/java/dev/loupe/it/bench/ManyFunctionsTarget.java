package dev.loupe.it.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * A generated C program with N functions {@code lat_fn_0000 ...}, each a short loop of its own length (about 0.1 to
 * 2 µs), all called in turn {@code ROUNDS} times a second: {@code many_functions [ROUNDS]} (default 5, so 5 × N calls
 * a second). Built with a release name compiled in, so an equally fast rebuild has another GNU build id.
 */
final class ManyFunctionsTarget {
    static final String PREFIX = "lat_fn_";

    private ManyFunctionsTarget() {}

    static String source(int functions, String release) {
        StringBuilder c = new StringBuilder("""
                #include <stdio.h>
                #include <stdlib.h>
                #include <time.h>
                #define NOINLINE __attribute__((noinline, noclone, used))
                static volatile unsigned long sink;
                """);
        c.append("static const char release[] = \"").append(release).append("\";\n");
        for (int i = 0; i < functions; i++) {
            // Each its own constant and loop length: no two are identical (nothing for the linker to fold).
            c.append(String.format(Locale.ROOT, "NOINLINE unsigned long %s%04d(unsigned long x) { for (int i = 0; i < %d; i++) "
                    + "{ x = x * 6364136223846793005UL + %dUL; __asm__ volatile(\"\" : \"+r\"(x)); } return x; }%n",
                    PREFIX, i, 50 + (i * 37) % 1000, 2 * i + 1));
        }
        c.append("static unsigned long (*const fns[])(unsigned long) = {");
        for (int i = 0; i < functions; i++) {
            c.append(i % 8 == 0 ? "\n  " : " ").append(PREFIX).append(String.format(Locale.ROOT, "%04d", i)).append(',');
        }
        c.append("""

                };
                int main(int argc, char **argv) {
                    int rounds = argc > 1 ? atoi(argv[1]) : 5;
                    if (rounds < 1) { fprintf(stderr, "rounds per second must be >= 1\\n"); return 2; }
                    printf("release %s functions %zu rounds %d\\n", release, sizeof fns / sizeof *fns, rounds);
                    fflush(stdout);
                    struct timespec next;
                    clock_gettime(CLOCK_MONOTONIC, &next);
                    for (unsigned long r = 0;; r++) {
                        for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) sink += fns[i](r + i);
                        next.tv_nsec += 1000000000L / rounds;
                        if (next.tv_nsec >= 1000000000L) { next.tv_sec++; next.tv_nsec -= 1000000000L; }
                        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
                    }
                }
                """);
        return c.toString();
    }

    /** Writes and compiles the program into {@code out} (gcc -O2, no identical-code folding). */
    static Path build(Path out, int functions, String release) throws IOException, InterruptedException {
        Path src = Files.writeString(out.resolveSibling(out.getFileName() + ".c"), source(functions, release));
        BenchAgent.exec(List.of("gcc", "-O2", "-fno-ipa-icf", "-Wl,--build-id", src.toString(), "-o", out.toString()));
        return out;
    }
}
