package dev.loupe.unwinder.hotspot;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/** A real HotSpot JVM running {@code HotSpotTarget} (source-launcher mode, default flags) until closed. */
final class TargetJvm implements AutoCloseable {
    static final Path JDK25 = Path.of("/usr/lib/jvm/temurin-25-jdk-amd64");
    static final Path JDK17 = Path.of("/usr/lib/jvm/java-17-openjdk-amd64");
    /** Debian 11's JDK 11, unpacked there by {@code ./loupe test} (integration-tests/scripts/jdk11.sh). */
    static final Path JDK11 = Path.of("/var/cache/loupe/jdk-11/usr/lib/jvm/java-11-openjdk-amd64");

    static final String SOURCE = """
            public class HotSpotTarget {
                static volatile long sink;

                static long spinA(long x) {
                    long s = x;
                    for (int i = 0; i < 200; i++) {
                        s = s * 31 + (s >>> 7) + i;
                    }
                    return s;
                }

                static long spinB(long x) {
                    long s = x;
                    for (int i = 0; i < 100; i++) {
                        s ^= (s << 13) + i;
                    }
                    return s;
                }

                static long spinC(long x) {
                    long s = x;
                    for (int i = 0; i < 50; i++) {
                        s += (s >>> 3) ^ i;
                    }
                    return s;
                }

                // outer's nmethods hold inner and mid, inlined (JVM_OPTIONS say so, as ground truth), calling spinC.
                static long mid(long x) {
                    return spinC(x) + 1;
                }

                static long inner(long x) {
                    return mid(x) ^ 3;
                }

                static long outer(long x) {
                    return inner(x) + 7;
                }

                public static void main(String[] args) {
                    for (long n = 1; ; n++) {
                        sink += spinA(n);
                        sink += spinB(n);
                        sink += outer(n);
                        if (n % 100000 == 0) {
                            System.out.println("iterations " + n);
                        }
                    }
                }
            }
            """;

    /** What is inlined where: see outer, inner and mid in {@link #SOURCE}. */
    static final List<String> JVM_OPTIONS = List.of("-XX:CompileCommand=quiet",
            "-XX:CompileCommand=inline,HotSpotTarget::mid", "-XX:CompileCommand=inline,HotSpotTarget::inner",
            "-XX:CompileCommand=dontinline,HotSpotTarget::spinC", "-XX:CompileCommand=dontinline,HotSpotTarget::outer");

    final Path jdk;
    final Process process;
    private final BlockingQueue<String> lines = new ArrayBlockingQueue<>(1 << 16);

    private TargetJvm(Path jdk, Process process) {
        this.jdk = jdk;
        this.process = process;
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) {
                    lines.offer(l);
                }
            } catch (IOException ignored) {
                // the process ended
            }
        }, "target-jvm-out");
        t.setDaemon(true);
        t.start();
    }

    /** Starts the target and waits until it has run {@code iterations} iterations of spinA and spinB. */
    static TargetJvm start(Path jdk, Path dir, long iterations) throws Exception {
        Files.createDirectories(dir);
        Path src = dir.resolve("HotSpotTarget.java");
        Files.writeString(src, SOURCE);
        List<String> cmd = new java.util.ArrayList<>(List.of(jdk.resolve("bin/java").toString()));
        cmd.addAll(JVM_OPTIONS);
        cmd.add(src.toString());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        TargetJvm t = new TargetJvm(jdk, p);
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            String l = t.lines.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (l == null) {
                t.close();
                throw new IllegalStateException(jdk + ": target did not reach " + iterations + " iterations (alive " + p.isAlive() + ")");
            }
            if (l.startsWith("iterations ") && Long.parseLong(l.substring(11).trim()) >= iterations) {
                return t;
            }
        }
    }

    int pid() {
        return (int) process.pid();
    }

    /** Runs one of the JDK's tools (e.g. jcmd) and returns its output. */
    String tool(String name, String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>();
        cmd.add(jdk.resolve("bin/" + name).toString());
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException(cmd + " failed:\n" + out);
        }
        return out;
    }

    @Override
    public void close() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }
}
