package dev.loupe.unwinder.ehframe.bench;

import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.ehframe.UnwindTableBuilder;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Table build time vs {@code readelf --debug-dump=frames-interp} on the same file (the process's wall
 * time, output discarded), with the table's size. Not a test: figures for {@code ./loupe bench unwind}.
 *
 * <p>Usage: {@code UnwindTableBench [--runs N] [file...]} (default: libc.so.6 and the running JDK's
 * libjvm.so). "cold" is the first build in this JVM (class loading and interpretation included);
 * "warm" is the median of N builds after it, which is what a long-running agent pays.
 */
public final class UnwindTableBench {
    private UnwindTableBench() {}

    public static void main(String[] args) throws Exception {
        int runs = 7;
        List<Path> files = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--runs")) {
                runs = Integer.parseInt(args[++i]);
            } else {
                files.add(Path.of(args[i]));
            }
        }
        if (files.isEmpty()) {
            files.add(Path.of("/lib/x86_64-linux-gnu/libc.so.6"));
            files.add(Path.of(System.getProperty("java.home"), "lib", "server", "libjvm.so"));
        }
        System.out.printf("%-12s %9s %8s %10s %7s %10s %10s %10s %8s %8s%n", "file", "fdes", "rows", "bytes", "B/row",
                "cold ms", "warm ms", "readelf ms", "x cold", "x warm");
        for (Path f : files) {
            long t0 = System.nanoTime();
            UnwindTable first = UnwindTableBuilder.build(f);
            double cold = (System.nanoTime() - t0) / 1e6;
            double[] warm = new double[runs];
            for (int i = 0; i < runs; i++) {
                long t = System.nanoTime();
                UnwindTableBuilder.build(f);
                warm[i] = (System.nanoTime() - t) / 1e6;
            }
            double[] readelf = new double[Math.max(3, runs / 2)];
            for (int i = 0; i < readelf.length; i++) {
                long t = System.nanoTime();
                Process p = new ProcessBuilder("readelf", "--debug-dump=frames-interp", f.toString())
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
                if (p.waitFor() > 1) { // readelf exits 1 when it notes a missing separate debug file
                    throw new IllegalStateException("readelf failed on " + f);
                }
                readelf[i] = (System.nanoTime() - t) / 1e6;
            }
            double w = median(warm);
            double r = median(readelf);
            System.out.printf("%-12s %9d %8d %10d %7.2f %10.1f %10.1f %10.1f %8.1f %8.1f%n", f.getFileName(), first.stats().fdes(),
                    first.rowCount(), first.byteSize(), first.bytesPerRow(), cold, w, r, r / cold, r / w);
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
