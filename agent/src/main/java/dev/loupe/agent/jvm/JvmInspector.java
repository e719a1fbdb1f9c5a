package dev.loupe.agent.jvm;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcStatus;
import dev.loupe.unwinder.proc.ProcessRegistry;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Tells a HotSpot JVM from other processes and whether it may be attached to: it maps {@code libjvm.so} (so a
 * program that embeds the JVM counts too) and not OpenJ9's VM; its runtime is JDK 17 or later (the first with
 * {@code Compiler.perfmap}); it was not started with {@code -XX:+DisableAttachMechanism}; and the agent's
 * credentials are ones HotSpot accepts. The mappings come from the shared {@link ProcessRegistry} (usually
 * already read for the symbolizer); status, command line, environment and the {@code release} file are read here.
 */
final class JvmInspector {
    /** The first feature release with {@code Compiler.perfmap}. */
    static final int MIN_FEATURE = 17;
    private static final int MAX_RELEASE_BYTES = 64 << 10;
    private static final int MAX_CMDLINE_BYTES = 1 << 20;

    private final Path procRoot;
    private final ProcessRegistry registry;
    private final int selfUid;
    private final int selfGid;
    private final long selfPid = ProcessHandle.current().pid();

    /** @param selfUid, selfGid the agent's effective ids (what HotSpot sees of a client: SO_PEERCRED) */
    JvmInspector(ProcessRegistry registry, int selfUid, int selfGid) {
        this.procRoot = registry.procRoot();
        this.registry = registry;
        this.selfUid = selfUid;
        this.selfGid = selfGid;
    }

    /** The agent's own effective uid and gid, from {@code /proc/self/status}. */
    static ProcStatus self(Path procRoot) throws IOException {
        return ProcStatus.read(procRoot.resolve("self"));
    }

    /** @param startTicks the start of the process meant (-1: whichever has the pid now) */
    Inspection inspect(int pid, long startTicks) {
        ProcessRegistry.Snapshot snap;
        try {
            snap = registry.cached(pid).filter(s -> startTicks < 0 || s.startTicks() == startTicks).orElse(null);
            if (snap == null) {
                snap = registry.read(pid);
            }
        } catch (IOException e) {
            return new Inspection.Gone();
        }
        if (startTicks >= 0 && snap.startTicks() != startTicks) {
            return new Inspection.Gone();
        }
        List<String> paths = snap.executable().stream().map(MapEntry::path).toList();
        Optional<String> libjvm = JavaRuntime.libjvm(paths);
        if (libjvm.isEmpty()) {
            return new Inspection.NotAJvm();
        }
        if (JavaRuntime.openJ9(paths)) {
            return new Inspection.Skipped("pid " + pid + " (OpenJ9)", "not HotSpot: OpenJ9 has no Compiler.perfmap");
        }
        Path root = procRoot.resolve(Integer.toString(pid)).resolve("root");
        Map<String, String> release = release(root, libjvm.get());
        Optional<String> other = JavaRuntime.otherVariant(release);
        if (other.isPresent()) {
            return new Inspection.Skipped("pid " + pid + " (" + other.get() + ")",
                    "not HotSpot (JVM_VARIANT " + other.get() + "): no Compiler.perfmap");
        }
        JavaRuntime runtime = JavaRuntime.of(libjvm.get(), release);
        String who = "pid " + pid + " (" + runtime.describe() + ")";
        if (pid == selfPid) {
            return new Inspection.Skipped(who, "the agent itself (no attach listener in the agent)");
        }
        if (runtime.feature() > 0 && runtime.feature() < MIN_FEATURE) {
            return new Inspection.Skipped(who, "Compiler.perfmap needs JDK " + MIN_FEATURE
                    + " or later; older JVMs are not supported yet");
        }
        ProcStatus status;
        List<String> cmdline;
        try {
            Path dir = procRoot.resolve(Integer.toString(pid));
            status = ProcStatus.read(dir);
            cmdline = JvmOptions.nulSeparated(readCapped(dir.resolve("cmdline"), MAX_CMDLINE_BYTES));
            if (registry.startTicks(pid) != snap.startTicks()) {
                return new Inspection.Gone(); // what was just read may be another process's
            }
        } catch (IOException | RuntimeException e) {
            return new Inspection.Gone();
        }
        List<String> environ;
        try {
            environ = JvmOptions.nulSeparated(readCapped(procRoot.resolve(pid + "/environ"), MAX_CMDLINE_BYTES));
        } catch (IOException e) {
            environ = List.of(); // not ours to read: the command line still says most
        }
        if (JvmOptions.attachDisabled(cmdline, environ)) {
            return new Inspection.Skipped(who, "started with -XX:+" + JvmOptions.DISABLE_ATTACH);
        }
        Optional<String> refused = credentialProblem(selfUid, selfGid, status.euid(), status.egid());
        if (refused.isPresent()) {
            return new Inspection.Skipped(who, refused.get());
        }
        return new Inspection.Attachable(new JvmTarget(pid, snap.startTicks(), status.nsPid(pid), status.euid(),
                status.egid(), runtime));
    }

    /**
     * Why HotSpot would refuse a client with the agent's credentials, if it would: it accepts a peer whose
     * effective uid is root, or whose effective uid and gid are both its own ({@code SO_PEERCRED}).
     */
    static Optional<String> credentialProblem(int selfUid, int selfGid, int jvmUid, int jvmGid) {
        if (selfUid == 0) {
            return Optional.empty();
        }
        if (selfUid != jvmUid) {
            return Optional.of("loupe runs as uid " + Integer.toUnsignedString(selfUid) + ", the JVM as uid "
                    + Integer.toUnsignedString(jvmUid) + ": HotSpot accepts only its own uid or root");
        }
        if (selfGid != jvmGid) {
            return Optional.of("loupe runs as gid " + Integer.toUnsignedString(selfGid) + ", the JVM as gid "
                    + Integer.toUnsignedString(jvmGid) + ": HotSpot accepts only its own uid and gid, or root");
        }
        return Optional.empty();
    }

    /** The first {@code release} file above libjvm.so, seen through the process's root; empty when none is readable. */
    private static Map<String, String> release(Path root, String libjvm) {
        for (String candidate : JavaRuntime.releaseCandidates(libjvm)) {
            Path p = root.resolve(candidate.substring(1));
            try {
                return JavaRuntime.parseRelease(new String(readCapped(p, MAX_RELEASE_BYTES), StandardCharsets.UTF_8));
            } catch (IOException notThere) {
                // the next directory up
            }
        }
        return Map.of();
    }

    private static byte[] readCapped(Path p, int max) throws IOException {
        try (InputStream in = Files.newInputStream(p)) {
            return in.readNBytes(max);
        }
    }
}
