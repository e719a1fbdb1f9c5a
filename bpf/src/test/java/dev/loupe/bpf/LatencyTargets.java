package dev.loupe.bpf;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Test-only: builds the latency targets and finds probe offsets with binutils (objdump, readelf) as the
 * oracle — the real resolver (RET decoder, gopclntab) lives in unwinder/.
 */
final class LatencyTargets {
    static final Path GO = Path.of("/usr/lib/go-1.19/bin/go");
    static final int GOID_OFFSET_GO_1_19 = 152;

    private LatencyTargets() {}

    /** A function's entry and RET instructions as file offsets. */
    record FunctionOffsets(long entry, List<Long> rets) {}

    /** What a target measured itself. */
    record GroundTruth(long calls, long sumNs, long[] buckets, String output) {
        double meanNs() {
            return (double) sumNs / calls;
        }

        static GroundTruth parse(String out) {
            long calls = -1;
            long sum = -1;
            long[] b = new long[LatencyHistogram.BUCKETS];
            for (String line : out.split("\n")) {
                String[] f = line.trim().split(" ");
                switch (f[0]) {
                    case "calls" -> calls = Long.parseLong(f[1]);
                    case "sum_ns" -> sum = Long.parseLong(f[1]);
                    case "bucket" -> b[Integer.parseInt(f[1])] = Long.parseLong(f[2]);
                    default -> { }
                }
            }
            if (calls <= 0 || sum <= 0) {
                throw new IllegalStateException("target printed no ground truth: " + out);
            }
            return new GroundTruth(calls, sum, b, out);
        }

        @Override
        public String toString() {
            return "calls " + calls + ", mean " + meanNs() + " ns, buckets " + Arrays.toString(buckets);
        }
    }

    static Path buildGo(Path srcDir, Path out, String... buildFlags) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(GO.toString(), "build", "-o", out.toString()));
        cmd.addAll(List.of(buildFlags));
        cmd.add("main.go");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(srcDir.toFile());
        pb.environment().put("GO111MODULE", "off");
        pb.environment().put("GOCACHE", out.getParent().resolve("gocache").toString());
        run(pb, 300);
        return out;
    }

    static Path buildC(Path src, Path out) throws Exception {
        run(new ProcessBuilder("gcc", "-O2", "-pthread", src.toString(), "-o", out.toString()), 120);
        return out;
    }

    /** Entry and RET file offsets of {@code symbol}, from objdump's disassembly and readelf's PT_LOADs. */
    static FunctionOffsets offsets(Path binary, String symbol) throws Exception {
        String dis = run(new ProcessBuilder("objdump", "-d", "--no-show-raw-insn", "--disassemble=" + symbol, binary.toString()), 120);
        Matcher head = Pattern.compile("(?m)^([0-9a-f]+) <" + Pattern.quote(symbol) + ">:$").matcher(dis);
        if (!head.find()) {
            throw new IllegalStateException(symbol + " not found in " + binary);
        }
        long entry = Long.parseLong(head.group(1), 16);
        List<Long> rets = new ArrayList<>();
        Matcher ret = Pattern.compile("(?m)^\\s+([0-9a-f]+):\\s+retq?\\b").matcher(dis.substring(head.end()));
        while (ret.find()) {
            rets.add(fileOffset(binary, Long.parseLong(ret.group(1), 16)));
        }
        return new FunctionOffsets(fileOffset(binary, entry), rets);
    }

    static long fileOffset(Path binary, long vaddr) throws Exception {
        String ph = run(new ProcessBuilder("readelf", "-lW", binary.toString()), 60);
        Matcher m = Pattern.compile("(?m)^\\s+LOAD\\s+0x([0-9a-f]+)\\s+0x([0-9a-f]+)\\s+0x[0-9a-f]+\\s+0x([0-9a-f]+)").matcher(ph);
        while (m.find()) {
            long off = Long.parseUnsignedLong(m.group(1), 16);
            long va = Long.parseUnsignedLong(m.group(2), 16);
            long filesz = Long.parseUnsignedLong(m.group(3), 16);
            if (vaddr >= va && vaddr < va + filesz) {
                return vaddr - va + off;
            }
        }
        throw new IllegalStateException("0x" + Long.toHexString(vaddr) + " is in no PT_LOAD of " + binary);
    }

    static byte[] bytesAt(Path binary, long offset, int n) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(binary.toFile(), "r")) {
            byte[] b = new byte[n];
            f.seek(offset);
            f.readFully(b);
            return b;
        }
    }

    /** Runs a command to completion; its output, or an exception naming the command, exit code and output. */
    static String run(ProcessBuilder pb, int timeoutSeconds) throws Exception {
        return runWithPid(pb, timeoutSeconds).output();
    }

    record Ran(String output, int pid) {}

    static Ran runWithPid(ProcessBuilder pb, int timeoutSeconds) throws Exception {
        Process p = pb.redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("timeout: " + pb.command());
        }
        String s = new String(out);
        if (p.exitValue() != 0) {
            throw new IllegalStateException(pb.command() + " exited " + p.exitValue() + ": " + s);
        }
        return new Ran(s, (int) p.pid());
    }

    /** A C target built without PIE and with frame pointers, so return addresses are link-time addresses. */
    static Path buildCWithFramePointers(Path src, Path out) throws Exception {
        run(new ProcessBuilder("gcc", "-O2", "-fno-omit-frame-pointer", "-no-pie", "-pthread", src.toString(), "-o", out.toString()), 120);
        return out;
    }

    /** Function names of a non-PIE binary by address (binutils' nm as the oracle). */
    static java.util.function.LongFunction<String> symbols(Path binary) throws Exception {
        java.util.TreeMap<Long, String> byAddr = new java.util.TreeMap<>();
        for (String line : run(new ProcessBuilder("nm", "-n", "--defined-only", binary.toString()), 120).split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 3 && (f[1].equals("T") || f[1].equals("t"))) {
                byAddr.put(Long.parseUnsignedLong(f[0], 16), f[2]);
            }
        }
        return addr -> {
            var e = byAddr.floorEntry(addr);
            return e == null ? "?" : e.getValue();
        };
    }

    /** Names of a group's stack: the probed function at its entry, then each caller at its return address - 1. */
    static List<String> names(java.util.function.LongFunction<String> symbols, long[] stack) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < stack.length; i++) {
            out.add(symbols.apply(i == 0 ? stack[i] : stack[i] - 1));
        }
        return out;
    }
}
