package dev.loupe.agent.unwind;

import dev.loupe.unwinder.hotspot.CodeCache;
import dev.loupe.unwinder.hotspot.CodeCacheUnwindTable;
import dev.loupe.unwinder.hotspot.HotSpotException;
import dev.loupe.unwinder.hotspot.HotSpotJvm;
import dev.loupe.unwinder.proc.MapEntry;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Unwind tables for HotSpot JVMs' JIT code (issue 17): per JVM process, one table for its whole code cache, built
 * from the code blobs the JVM itself describes ({@link CodeCacheUnwindTable}, read from outside through
 * {@link HotSpotJvm}). A process is a JVM when it maps {@code libjvm.so}. JIT code comes and goes, so a sampled
 * JVM's code cache is scanned again, {@link #RESCAN_NANOS} after a change and twice as long after each scan that
 * found none (up to {@link #MAX_RESCAN_NANOS}: compilation comes in bursts, at start-up and after a phase change;
 * a scan of a few MB of code cache costs milliseconds). When its blobs changed, the process is registered again
 * with a new table and the old one leaves the kernel at once (no other process can use it). Code compiled since
 * the last scan has no rows: the walker's checked frame-pointer step applies there, which may skip the frames
 * between it and the next frame pointer.
 *
 * <p>Uploader thread only.
 */
final class JitTables {
    private static final System.Logger LOG = System.getLogger(JitTables.class.getName());
    /** A JVM whose code just changed is scanned again after this long; each scan finding no change doubles it. */
    static final long RESCAN_NANOS = TimeUnit.SECONDS.toNanos(1);
    static final long MAX_RESCAN_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** The shortest wait between two scans of one JVM when its samples show code the table lacks. */
    static final long HINTED_RESCAN_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
    /**
     * After a hinted scan found nothing new (the unnamed frames were something else), hints are ignored this long,
     * so that frames no scan can explain do not keep a JVM scanned four times a second.
     */
    static final long HINTS_IGNORED_NANOS = TimeUnit.SECONDS.toNanos(10);
    /**
     * A scan of a big JVM's code cache (a build tool, an application server) takes tens of milliseconds: the next
     * one may start no sooner than this many times the last one's duration after it, so that rescans take at most
     * about 1 % of a core a JVM however often its code changes.
     */
    static final int SCAN_COST_FACTOR = 100;

    /** Opens a process's JVM; production reads it through /proc with {@link HotSpotJvm#open}. */
    interface Opener {
        java.util.Optional<HotSpotJvm> open(int pid) throws IOException, HotSpotException;
    }

    /** A JVM's table as of its last scan: which address ranges it covers (the code heaps) and its entry. */
    record Table(TableEntry entry, List<CodeCache.Range> heaps) {
        boolean covers(MapEntry m) {
            for (CodeCache.Range h : heaps) {
                if (m.start() < h.high() && h.low() < m.end()) {
                    return true;
                }
            }
            return false;
        }
    }

    private static final class State {
        final long startTicks;
        final HotSpotJvm jvm; // null: not a JVM, or one that cannot be read (said once)
        Table table;
        long signature;
        long lastScan;
        long lastFullScan;
        long fingerprint;
        long lastScanCost;
        long rescanAfter = RESCAN_NANOS;
        boolean hinted;
        long hintsIgnoredFrom = Long.MIN_VALUE / 2;
        int generation;

        State(long startTicks, HotSpotJvm jvm) {
            this.startTicks = startTicks;
            this.jvm = jvm;
        }
    }

    private final Opener opener;
    private final LongSupplier nanoTime;
    private final Map<Integer, State> states = new HashMap<>();
    private final List<TableEntry> retired = new ArrayList<>();
    private final AtomicLong scans = new AtomicLong();
    private final AtomicLong tablesBuilt = new AtomicLong();
    private final AtomicLong scanFailures = new AtomicLong();

    JitTables(Opener opener, LongSupplier nanoTime) {
        this.opener = opener;
        this.nanoTime = nanoTime;
    }

    static JitTables reading(Path procRoot, LongSupplier nanoTime) {
        return new JitTables(pid -> HotSpotJvm.open(procRoot, pid), nanoTime);
    }

    /**
     * The table for a process about to be registered (built now if it has none or its code changed), or null when
     * it is not a JVM or its code cache cannot be read: its JIT code then keeps frame pointers.
     */
    Table forProcess(int pid, long startTicks, List<MapEntry> exec) {
        State s = states.get(pid);
        if (s != null && s.startTicks != startTicks) {
            forget(pid);
            s = null;
        }
        if (s == null) {
            if (!mapsLibjvm(exec) || pid == ProcessHandle.current().pid()) {
                return null; // not a JVM (or the agent itself, whose own JIT would keep changing what it scans)
            }
            s = new State(startTicks, open(pid));
            states.put(pid, s);
        }
        if (s.jvm == null) {
            return null;
        }
        if (s.table == null) {
            scan(pid, s, true);
        }
        return s.table;
    }

    /**
     * Scans the JVMs among {@code sampled} whose last scan is older than {@link #RESCAN_NANOS}; returns those whose
     * code changed (they need registering again; their next registration gets the new table).
     */
    List<Integer> changed(Iterable<Integer> sampled) {
        List<Integer> changed = new ArrayList<>();
        long now = nanoTime.getAsLong();
        for (int pid : sampled) {
            State s = states.get(pid);
            if (s != null && s.jvm != null && now - s.lastScan >= Math.max(s.rescanAfter, SCAN_COST_FACTOR * s.lastScanCost)) {
                if (scan(pid, s, false)) {
                    s.rescanAfter = RESCAN_NANOS;
                    changed.add(pid);
                } else {
                    s.rescanAfter = Math.min(MAX_RESCAN_NANOS, Math.max(RESCAN_NANOS, s.rescanAfter * 2));
                    if (s.hinted) {
                        s.hintsIgnoredFrom = now;
                    }
                }
                s.hinted = false;
            }
        }
        return changed;
    }

    /**
     * A sample showed code the table does not describe: the next {@link #changed} scans this JVM if its last scan
     * is at least {@link #HINTED_RESCAN_NANOS} old (a burst of such samples costs one scan, not one each).
     */
    void scanSoon(int pid) {
        State s = states.get(pid);
        if (s != null && nanoTime.getAsLong() - s.hintsIgnoredFrom >= HINTS_IGNORED_NANOS) {
            s.rescanAfter = Math.min(s.rescanAfter, HINTED_RESCAN_NANOS);
            s.hinted = true;
        }
    }

    /** Whether the process is a JVM this keeps a table for. */
    boolean isJvm(int pid) {
        State s = states.get(pid);
        return s != null && s.jvm != null;
    }

    /** Reads the code cache; true when it differs from the table's (then a new table replaces it). */
    private boolean scan(int pid, State s, boolean first) {
        s.lastScan = nanoTime.getAsLong();
        CodeCache cache;
        try {
            // The segment maps first (a 128th of the heap): unchanged, the blobs almost surely are too; a full scan
            // still runs at least every MAX_RESCAN_NANOS for what they cannot show (a block reused at its size).
            long fingerprint = s.jvm.codeCacheFingerprint();
            if (!first && s.table != null && fingerprint == s.fingerprint && s.lastScan - s.lastFullScan < MAX_RESCAN_NANOS) {
                s.lastScanCost = nanoTime.getAsLong() - s.lastScan;
                return false;
            }
            s.fingerprint = fingerprint;
            scans.incrementAndGet();
            s.lastFullScan = s.lastScan;
            cache = s.jvm.codeCache();
            s.lastScanCost = nanoTime.getAsLong() - s.lastScan;
        } catch (IOException e) {
            scanFailures.incrementAndGet();
            return false; // exiting, or mid-change: the next scan tries again
        } catch (HotSpotException | RuntimeException e) {
            scanFailures.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "jit tables: cannot read the code cache of pid " + pid + ": " + e);
            return false;
        }
        long signature = signature(cache);
        if (!first && signature == s.signature && s.table != null) {
            return false;
        }
        try {
            CodeCacheUnwindTable.Built built = CodeCacheUnwindTable.build("[jit] pid " + pid, cache);
            TableEntry entry = new TableEntry(new JitKey(pid, s.startTicks, ++s.generation), "[jit] pid " + pid);
            entry.retained = built.table();
            entry.pcBase = built.table().pcBase();
            entry.pages = built.table().pageCount();
            entry.rows = built.table().rowCount();
            entry.rules = built.table().ruleCount();
            if (s.table != null) {
                retired.add(s.table.entry());
            } else {
                LOG.log(System.Logger.Level.INFO, "jit tables: pid " + pid + " (" + s.jvm.vmVersion() + "): "
                        + built.compiledBlobs() + " compiled blobs, " + built.interpreterBlobs() + " interpreter, "
                        + built.undescribedBlobs() + " without a frame size; " + built.table().rowCount() + " rows");
            }
            s.table = new Table(entry, List.copyOf(cache.heaps()));
            s.signature = signature;
            tablesBuilt.incrementAndGet();
            return true;
        } catch (Exception e) {
            scanFailures.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "jit tables: no table for pid " + pid + ": " + e.getMessage());
            return false;
        }
    }

    private static long signature(CodeCache cache) {
        long h = 1125899906842597L;
        for (var b : cache.blobs()) {
            h = 31 * h + b.start();
            h = 31 * h + b.end();
            h = 31 * h + b.frameSizeBytes();
            h = 31 * h + b.kind().ordinal();
        }
        return h;
    }

    private HotSpotJvm open(int pid) {
        try {
            HotSpotJvm jvm = opener.open(pid).orElse(null);
            if (jvm == null) {
                return null;
            }
            return jvm;
        } catch (IOException e) {
            return null; // gone
        } catch (HotSpotException | RuntimeException e) {
            LOG.log(System.Logger.Level.INFO, "jit tables: pid " + pid + " maps libjvm.so but its layout cannot be read ("
                    + e.getMessage() + "); its Java frames keep frame pointers");
            return null;
        }
    }

    private static boolean mapsLibjvm(List<MapEntry> exec) {
        for (MapEntry m : exec) {
            if (m.path().endsWith("/libjvm.so")) {
                return true;
            }
        }
        return false;
    }

    /** Tables replaced by newer ones since the last call: the caller drops them from the kernel once unused. */
    List<TableEntry> takeRetired() {
        List<TableEntry> r = List.copyOf(retired);
        retired.clear();
        return r;
    }

    /** The process exited or was replaced: its table goes with it. */
    void forget(int pid) {
        State s = states.remove(pid);
        if (s == null) {
            return;
        }
        if (s.table != null) {
            retired.add(s.table.entry());
        }
        if (s.jvm != null) {
            try {
                s.jvm.close();
            } catch (Exception e) {
                // nothing held but a file descriptor
            }
        }
    }

    long scans() {
        return scans.get();
    }

    long tablesBuilt() {
        return tablesBuilt.get();
    }

    long scanFailures() {
        return scanFailures.get();
    }

    /** A JIT table's cache key: never equal to a file's. */
    record JitKey(int pid, long startTicks, int generation) {}
}
