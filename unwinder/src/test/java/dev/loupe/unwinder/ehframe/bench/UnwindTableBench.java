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
 * <p>Usage: {@code UnwindTableBench [--runs N] [--warmup N] [file...]} (default: libc.so.6 and the
 * running JDK's libjvm.so). "cold" is each file's first build in this JVM (the first file's includes
 * class loading and interpreted code); "warm" is the median of N builds after N warm-up builds of every
 * file, which is what a long-running agent pays; readelf is the median wall time of its process.
 */
public final class UnwindTableBench {
    private UnwindTableBench() {}

    public static void main(String[] args) throws Exception {
        int runs = 10;
        int warmup = 20;
        List<Path> files = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--runs")) {
                runs = Integer.parseInt(args[++i]);
            } else if (args[i].equals("--warmup")) {
                warmup = Integer.parseInt(args[++i]);
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
        UnwindTable[] first = new UnwindTable[files.size()];
        double[] cold = new double[files.size()];
        for (int k = 0; k < files.size(); k++) {
            long t0 = System.nanoTime();
            first[k] = UnwindTableBuilder.build(files.get(k));
            cold[k] = (System.nanoTime() - t0) / 1e6;
        }
        for (int i = 0; i < warmup; i++) {
            for (Path f : files) {
                UnwindTableBuilder.build(f);
            }
        }
        for (int k = 0; k < files.size(); k++) {
            Path f = files.get(k);
            double[] warm = new double[runs];
            for (int i = 0; i < runs; i++) {
                long t = System.nanoTime();
                UnwindTableBuilder.build(f);
                warm[i] = (System.nanoTime() - t) / 1e6;
            }
            double[] readelf = new double[5];
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
            UnwindTable t = first[k];
            System.out.printf("%-12s %9d %8d %10d %7.2f %10.1f %10.1f %10.1f %8.1f %8.1f%n", f.getFileName(), t.stats().fdes(),
                    t.rowCount(), t.byteSize(), t.bytesPerRow(), cold[k], w, r, r / cold[k], r / w);
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
