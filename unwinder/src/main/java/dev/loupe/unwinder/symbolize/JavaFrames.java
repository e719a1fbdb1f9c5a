package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.hotspot.CodeBlob;
import dev.loupe.unwinder.hotspot.CodeCache;
import dev.loupe.unwinder.hotspot.HotSpotException;
import dev.loupe.unwinder.hotspot.HotSpotJvm;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Names a HotSpot JVM's Java frames from its own memory, with no attach and no JVM flag (issue 17): an interpreter
 * frame the walker reported as its {@code Method*}, and JIT code the perf map does not name, through the code
 * blob holding the address (an nmethod's {@code Method*}, or a stub's own name). The code cache is read again on
 * a miss, at most every {@link #RESCAN_NANOS}. Held by the process's {@link ProcessState}, so it goes with it.
 */
final class JavaFrames implements AutoCloseable {
    static final long RESCAN_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    static final long MAX_RESCAN_NANOS = TimeUnit.SECONDS.toNanos(30);
    /**
     * A scan costs milliseconds for a small JVM and tens of them for a big one (a build tool, an application server),
     * on the sampling thread: the next may start no sooner than this many times the last one's duration after it
     * (at most about 1 % of a core a JVM).
     */
    static final int SCAN_COST_FACTOR = 100;

    private final HotSpotJvm jvm;
    private final String jitPath;
    // The last scan, in primitive arrays sorted by start (24 bytes a blob: a big JVM has tens of thousands); a
    // blob's name is kept only where it has no Method* (stubs, a few hundred).
    private long[] starts = new long[0];
    private long[] ends = new long[0];
    private long[] methods = new long[0];
    private long[] blobs = new long[0];
    private String[] stubNames = new String[0];
    private long lastScan;
    private long lastScanCost;
    private long rescanAfter = RESCAN_NANOS; // doubles while rescans do not find the missing address
    private boolean scanned; // the arrays hold a scan
    private boolean attempted; // a scan was tried (it may have failed: a failing JVM is not tried on every miss)

    /**
     * The mapping of interpreted frames: their values are tagged {@code Method*}s (bit 62 set), all inside this range,
     * named for the runtime and the kind of frame ({@code [interpreted] java}), as JIT code's is {@code [jit] java}.
     * One instance per process: profiles key mappings by identity.
     */
    private final MappingRef interpreted;

    static final long INTERPRETED_START = 1L << 62;
    static final long INTERPRETED_LIMIT = INTERPRETED_START + (1L << 47);

    private JavaFrames(HotSpotJvm jvm, String exe) {
        this.jvm = jvm;
        this.jitPath = "[jit] " + exe;
        this.interpreted = new MappingRef(INTERPRETED_START, INTERPRETED_LIMIT, 0, "[interpreted] " + exe, null, true);
    }

    MappingRef interpretedMapping() {
        return interpreted;
    }

    /**
     * The process's JVM, or empty when it is none or cannot be read (its Java frames stay unnamed), or when it is
     * this process: the agent does not read its own code cache while its own JIT changes it.
     */
    static Optional<JavaFrames> open(Path procRoot, int pid) {
        if (pid == ProcessHandle.current().pid()) {
            return Optional.empty();
        }
        String exe = "java";
        try {
            Path link = java.nio.file.Files.readSymbolicLink(procRoot.resolve(Integer.toString(pid)).resolve("exe"));
            if (link.getFileName() != null) {
                exe = link.getFileName().toString().replace(" (deleted)", "");
            }
        } catch (IOException | RuntimeException e) {
            // gone or not ours to read: the open below says so
        }
        String name = exe;
        try {
            return HotSpotJvm.open(procRoot, pid).map(j -> new JavaFrames(j, name));
        } catch (IOException | HotSpotException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** The name of the process's JIT code mapping, as the perf map names it: {@code [jit] EXECUTABLE}. */
    String jitPath() {
        return jitPath;
    }

    /** "pkg.Class.method" of an interpreter frame's {@code Method*}, or null. */
    String method(long method) {
        try {
            return jvm.methodName(method).orElse(null);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /**
     * The frames compiled code at {@code addr} stands for, innermost first: the methods C1/C2 inlined there, then the
     * compiled method itself (last); one element for code without inlining there and for a stub ("[name]"); null if
     * no blob holds the address. {@code callSite}: {@code addr} is a caller's return address moved back into its
     * call (the call site's own debug record is at the return address); else a sampled pc. A miss scans the code
     * cache again if the last scan is old enough: {@link #RESCAN_NANOS}, doubled (up to {@link #MAX_RESCAN_NANOS})
     * each time a rescan did not find the address (an address no blob holds is no reason to keep scanning), and never
     * sooner than {@link #SCAN_COST_FACTOR} times the last scan's duration.
     */
    List<String> compiled(long addr, boolean callSite, java.util.function.LongSupplier nanoTime) {
        int b = find(addr);
        if (b < 0) {
            long now = nanoTime.getAsLong();
            if (!attempted || now - lastScan >= Math.max(rescanAfter, SCAN_COST_FACTOR * lastScanCost)) {
                rescan(now);
                lastScanCost = nanoTime.getAsLong() - now;
                b = find(addr);
                rescanAfter = b >= 0 ? RESCAN_NANOS : Math.min(MAX_RESCAN_NANOS, rescanAfter * 2);
            }
        }
        if (b < 0) {
            return null;
        }
        if (methods[b] == 0) {
            String name = stubNames[b];
            return name == null || name.isEmpty() ? null : List.of("[" + name + "]");
        }
        long pc = callSite ? addr + 1 : addr;
        Scopes cached = scopes.get(pc);
        if (cached != null && cached.blob == blobs[b]) {
            return cached.names;
        }
        String own = method(methods[b]);
        if (own == null) {
            return null;
        }
        List<String> names = List.of(own);
        try {
            long[] chain = jvm.scopeMethods(new CodeBlob(CodeBlob.Kind.NMETHOD, blobs[b], starts[b], ends[b], -1, -1, "", methods[b]), pc);
            if (chain != null && chain.length > 1) {
                String[] n = new String[chain.length];
                for (int i = 0; i < chain.length - 1; i++) {
                    n[i] = method(chain[i]);
                    if (n[i] == null) {
                        n = null; // an inlined method without a name: the compiled method alone, rather than a guess
                        break;
                    }
                }
                if (n != null) {
                    n[chain.length - 1] = own;
                    names = List.of(n);
                }
            }
        } catch (IOException | RuntimeException e) {
            // gone, or debug information that does not hold together: the compiled method alone
        }
        scopes.put(pc, new Scopes(blobs[b], names));
        return names;
    }

    /** Decoded frames per pc, for the blob they were decoded in; emptied when a scan finds the code cache changed. */
    private record Scopes(long blob, List<String> names) {}

    static final int MAX_CACHED_SCOPES = 16_384;
    private final Map<Long, Scopes> scopes = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Scopes> e) {
            return size() > MAX_CACHED_SCOPES;
        }
    };

    private int find(long pc) {
        int i = Arrays.binarySearch(starts, pc);
        if (i < 0) {
            i = -i - 2;
        }
        return i >= 0 && pc < ends[i] ? i : -1;
    }

    private long fingerprint;

    private void rescan(long now) {
        lastScan = now;
        attempted = true;
        try {
            long f = jvm.codeCacheFingerprint(); // unchanged segment maps: the blobs almost surely are too
            if (scanned && f == fingerprint) {
                return;
            }
            fingerprint = f;
            scanned = true;
            CodeCache cache = jvm.codeCache();
            CodeBlob[] sorted = cache.blobs().toArray(new CodeBlob[0]);
            Arrays.sort(sorted, Comparator.comparingLong(CodeBlob::start));
            int n = sorted.length;
            long[] s = new long[n];
            long[] e = new long[n];
            long[] m = new long[n];
            long[] a = new long[n];
            String[] names = new String[n];
            for (int i = 0; i < n; i++) {
                s[i] = sorted[i].start();
                e[i] = sorted[i].end();
                m[i] = sorted[i].method();
                a[i] = sorted[i].address();
                names[i] = m[i] == 0 ? sorted[i].name() : null;
            }
            starts = s;
            ends = e;
            methods = m;
            blobs = a;
            stubNames = names;
            scopes.clear();
        } catch (IOException | HotSpotException | RuntimeException e) {
            // exiting or mid-change: the next miss after RESCAN_NANOS tries again
        }
    }

    @Override
    public void close() {
        try {
            jvm.close();
        } catch (Exception e) {
            // a file descriptor only
        }
    }

}
