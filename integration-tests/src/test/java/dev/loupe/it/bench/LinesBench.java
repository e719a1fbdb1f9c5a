package dev.loupe.it.bench;

import dev.loupe.pprof.proto.Profile;
import dev.loupe.unwinder.elf.ElfFile;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code ./loupe bench lines [BINARIES [SECONDS]]}: what source lines cost (issue 28). BINARIES distinct C programs
 * built with -g (half of them stripped with their debug file under /usr/lib/debug/.build-id, half carrying their
 * DWARF) run a hot loop about 2 % of the time each (about one core for 50: a shared machine keeps its other core); two agents profile them at the same time, one {@code --lines on}, one {@code --lines off},
 * so both see the same load. Printed: each agent's CPU per sample (its user-space work: symbolization and profile
 * building) and RSS (VmHWM), and the ratio on/off.
 */
public final class LinesBench {
    private static final String SOURCE = """
            #include <unistd.h>
            static volatile unsigned long sink;
            __attribute__((noinline, noipa)) unsigned long hot(unsigned long n) {
                unsigned long s = 0;
                for (unsigned long i = 0; i < n; i++) {
                    s += i * i ^ (i >> SHIFT);
                }
                return s;
            }
            __attribute__((noinline, noipa)) unsigned long middle(unsigned long n) { return hot(n) + 1; }
            int main(void) { for (;;) { sink += middle(1UL << 16); usleep(5000); } }
            """;

    private LinesBench() {}

    public static void main(String[] args) throws Exception {
        int binaries = args.length > 0 ? Integer.parseInt(args[0]) : 50;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 60;
        Path dir = Files.createTempDirectory("loupe-bench-lines");
        List<Path> debugFiles = new ArrayList<>();
        List<Process> targets = new ArrayList<>();
        Process on = null;
        Process off = null;
        try {
            for (int i = 0; i < binaries; i++) {
                Path c = dir.resolve("t" + i + ".c");
                Files.writeString(c, SOURCE.replace("SHIFT", Integer.toString(1 + i % 7)) + "// " + i + "\n");
                Path bin = dir.resolve("t" + i);
                BenchAgent.exec(List.of("gcc", "-O1", "-g", "-Wl,--build-id", c.toString(), "-o", bin.toString()));
                if (i % 2 == 0) {
                    String id = ElfFile.open(bin).buildId().orElseThrow();
                    Path debug = Path.of("/usr/lib/debug/.build-id", id.substring(0, 2), id.substring(2) + ".debug");
                    Files.createDirectories(debug.getParent());
                    BenchAgent.exec(List.of("objcopy", "--only-keep-debug", bin.toString(), debug.toString()));
                    BenchAgent.exec(List.of("objcopy", "--strip-all", bin.toString()));
                    debugFiles.add(debug);
                }
                targets.add(new ProcessBuilder(bin.toString()).redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
            }
            String pids = String.join(",", targets.stream().map(p -> Long.toString(p.pid())).toList());
            // Each agent is metered from its "profiling at" line (its start-up left out) to its exit after --duration,
            // the window its profile covers; the second starts a few seconds after the first, so the windows mostly overlap.
            on = start(dir, "on", pids, seconds);
            CpuMeter onCpu = CpuMeter.of(on.pid());
            long onStart = onCpu.nanos();
            off = start(dir, "off", pids, seconds);
            CpuMeter offCpu = CpuMeter.of(off.pid());
            long offStart = offCpu.nanos();
            // Each agent stops by itself after --duration and writes its profile; RSS is read just before.
            long onHwm = 0;
            long offHwm = 0;
            long onCpuNs = 0;
            long offCpuNs = 0;
            while (on.isAlive() || off.isAlive()) {
                if (on.isAlive()) {
                    onHwm = Math.max(onHwm, quietKb(on.pid()));
                    onCpuNs = Math.max(onCpuNs, quietNanos(onCpu) - onStart);
                }
                if (off.isAlive()) {
                    offHwm = Math.max(offHwm, quietKb(off.pid()));
                    offCpuNs = Math.max(offCpuNs, quietNanos(offCpu) - offStart);
                }
                Thread.sleep(200);
            }
            onCpu.close();
            offCpu.close();
            long onSamples = samples(dir.resolve("profiles-on"));
            long offSamples = samples(dir.resolve("profiles-off"));
            double onUs = onCpuNs / 1e3 / onSamples;
            double offUs = offCpuNs / 1e3 / offSamples;
            System.out.printf("lines bench: %d binaries with DWARF (%d of them stripped, debug file by build id), %d s at 99 Hz, "
                    + "two agents at once; CPU from %s%n", binaries, debugFiles.size(), seconds, onCpu.source());
            System.out.printf("  --lines on : %,d samples, agent CPU %.1f us/sample, RSS (VmHWM) %.1f MB%n", onSamples, onUs, onHwm / 1024.0);
            System.out.printf("  --lines off: %,d samples, agent CPU %.1f us/sample, RSS (VmHWM) %.1f MB%n", offSamples, offUs, offHwm / 1024.0);
            System.out.printf("  on/off: CPU per sample %.2fx, RSS %+.1f MB%n", onUs / offUs, (onHwm - offHwm) / 1024.0);
        } finally {
            for (Process p : targets) {
                p.destroyForcibly();
            }
            if (on != null) {
                BenchAgent.stop(on);
            }
            if (off != null) {
                BenchAgent.stop(off);
            }
            for (Path d : debugFiles) {
                Files.deleteIfExists(d);
            }
        }
    }

    private static Process start(Path dir, String lines, String pids, int seconds) throws Exception {
        return BenchAgent.start(BenchAgent.jar(), dir.resolve("agent-" + lines + ".log"), List.of("--pid", pids, "--frequency", "99",
                "--duration", seconds + "s", "--interval", "3600s", "--output", dir.resolve("profiles-" + lines).toString(),
                "--http", "off", "--lines", lines));
    }

    /** VmHWM of a process that may just have exited: 0 then. */
    private static long quietKb(long pid) {
        try {
            return BenchAgent.statusKb(pid, "VmHWM:");
        } catch (Exception gone) {
            return 0;
        }
    }

    private static long quietNanos(CpuMeter m) {
        try {
            return m.nanos();
        } catch (RuntimeException gone) {
            return 0;
        }
    }

    /** Samples in the one profile an agent wrote. */
    private static long samples(Path out) throws Exception {
        List<Path> files = dev.loupe.it.Profiles.files(out);
        if (files.size() != 1) {
            throw new IllegalStateException("one profile expected in " + out + ": " + files);
        }
        Profile p = dev.loupe.it.Profiles.read(files.get(0));
        return p.getSampleList().stream().mapToLong(s -> s.getValue(0)).sum();
    }
}
