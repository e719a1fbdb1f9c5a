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
    static final Path HOST = Path.of("/");
    /** Debian unstable's root file system with JDK 8 and 21, made by {@code ./loupe test} (integration-tests/scripts/sid-jdks.sh). */
    static final Path SID = Path.of("/var/cache/loupe/sid-jdks");
    static final Path JDK8 = Path.of("/usr/lib/jvm/java-8-openjdk-amd64");   // inside SID
    static final Path JDK21 = Path.of("/usr/lib/jvm/java-21-openjdk-amd64"); // inside SID
    static final Path IN_SID = Path.of("../integration-tests/scripts/in-sid.sh").toAbsolutePath().normalize();
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

    final Path root;
    final Path jdk;
    final Process process;
    private final BlockingQueue<String> lines = new ArrayBlockingQueue<>(1 << 16);

    private TargetJvm(Path root, Path jdk, Process process) {
        this.root = root;
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
        return start(HOST, jdk, dir, iterations);
    }

    /**
     * The same with a JDK of another root file system ({@link #SID}: run chrooted by in-sid.sh), {@code jdk} a path
     * inside it; the class is compiled and run in a directory under that root's /tmp (dir is then unused).
     */
    static TargetJvm start(Path root, Path jdk, Path dir, long iterations) throws Exception {
        Path seen = root.equals(HOST) ? dir : Path.of("/tmp/loupe-hotspot-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        Path real = root.equals(HOST) ? dir : root.resolve(seen.toString().substring(1));
        Files.createDirectories(real);
        Files.writeString(real.resolve("HotSpotTarget.java"), SOURCE);
        Process javac = new ProcessBuilder(command(root, jdk.resolve("bin/javac"), "-d", seen.toString(),
                seen.resolve("HotSpotTarget.java").toString())).redirectErrorStream(true).start();
        String javacOut = new String(javac.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (javac.waitFor() != 0) {
            throw new IllegalStateException(jdk + ": javac failed:\n" + javacOut);
        }
        List<String> args = new java.util.ArrayList<>(JVM_OPTIONS);
        args.addAll(List.of("-cp", seen.toString(), "HotSpotTarget"));
        Process p = new ProcessBuilder(command(root, jdk.resolve("bin/java"), args.toArray(String[]::new)))
                .redirectErrorStream(true).start();
        TargetJvm t = new TargetJvm(root, jdk, p);
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

    /** {@code program args...}, chrooted by in-sid.sh when {@code root} is not the host's. */
    static List<String> command(Path root, Path program, String... args) {
        List<String> cmd = new java.util.ArrayList<>();
        if (!root.equals(HOST)) {
            cmd.addAll(List.of(IN_SID.toString(), root.toString()));
        }
        cmd.add(program.toString());
        cmd.addAll(List.of(args));
        return cmd;
    }

    int pid() {
        return (int) process.pid();
    }

    /** Runs one of the JDK's tools (e.g. jcmd) and returns its output. */
    String tool(String name, String... args) throws Exception {
        List<String> cmd = command(root, jdk.resolve("bin/" + name), args);
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
