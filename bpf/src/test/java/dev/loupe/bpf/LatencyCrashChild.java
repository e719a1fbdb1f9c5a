package dev.loupe.bpf;

import java.nio.file.Path;

/** Test-only child JVM: attaches a native latency probe, says so, then waits to be killed. */
public final class LatencyCrashChild {
    private LatencyCrashChild() {}

    public static void main(String[] args) throws Exception {
        LatencyProbes probes = LatencyProbes.open();
        probes.attach(ProbeSpec.nativeFunction(1, Path.of(args[0]), -1, Long.parseLong(args[1])));
        System.out.println("attached " + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(120_000); // killed long before
        probes.close();
    }
}
