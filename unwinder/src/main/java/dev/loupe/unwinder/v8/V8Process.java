package dev.loupe.unwinder.v8;

import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.proc.ProcessGoneException;
import dev.loupe.unwinder.proc.ProcessMemory;
import dev.loupe.unwinder.runtime.CodeTable;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.RescanSchedule;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * One node process: the table for its JIT code (its anonymous executable mappings, read again on a
 * {@link RescanSchedule}) and the names of its {@link FrameType#V8} frames, read from {@code /proc/PID/mem}
 * ({@link V8Objects}) once per SharedFunctionInfo and kept under a byte budget ({@link #CACHE_BYTES}). A frame whose
 * object is not a SharedFunctionInfo (moved, reused) is named as such, never as another function.
 *
 * <p>Thread-safe: the symbolizers and the unwind table thread share it, under this object's lock.
 */
final class V8Process implements RuntimeProcess {
    private static final System.Logger LOG = System.getLogger(V8Process.class.getName());
    static final long CACHE_BYTES = 8L << 20;

    private final V8Runtime runtime;
    private final Path procRoot;
    private final int pid;
    private final ProcessMemory mem;
    private final V8Objects objects;
    private final long word;
    private final String mapping;
    private final LongSupplier nanoTime;
    private final RescanSchedule schedule = new RescanSchedule();
    private final Map<Long, V8Objects.Shared> cache = new LinkedHashMap<>(256, 0.75f, true);
    private long cachedBytes;
    private List<long[]> ranges = List.of();
    private CodeTable table;
    private int generation;
    private int handedOut;
    private boolean badObjectLogged;

    V8Process(V8Runtime runtime, Path procRoot, int pid, ProcessMemory mem, V8Layout layout, String exe, LongSupplier nanoTime) {
        this.runtime = runtime;
        this.procRoot = procRoot;
        this.pid = pid;
        this.mem = mem;
        this.objects = new V8Objects(mem, layout);
        this.word = V8FrameStep.dataWord(layout);
        this.mapping = "[js] " + exe;
        this.nanoTime = nanoTime;
    }

    @Override
    public synchronized RuntimeFrame taggedFrame(FrameType type, long value) {
        if (type != FrameType.V8) {
            return null;
        }
        V8FrameStep.Error err = V8FrameStep.error(value);
        long address = V8FrameStep.sharedAddress(value);
        if (address == 0) {
            return RuntimeFrame.of("[v8: " + (err == null ? "unknown error" : err.text()) + "]", mapping);
        }
        V8Objects.Shared shared = cache.get(address);
        if (shared == null) {
            try {
                runtime.objectReads.incrementAndGet();
                shared = objects.shared(address);
            } catch (V8Objects.NotObject e) {
                runtime.badObjects.incrementAndGet();
                if (!badObjectLogged) {
                    badObjectLogged = true; // why the first frame could not be named (a layout problem shows here)
                    LOG.log(System.Logger.Level.INFO, "v8: pid " + pid + ": a frame's SharedFunctionInfo at 0x"
                            + Long.toHexString(address) + " not read: " + e.getMessage() + " (said once for the process)");
                }
                return RuntimeFrame.of("[v8: not a function]", mapping);
            } catch (IOException e) {
                return RuntimeFrame.of("[v8: process gone]", mapping);
            }
            cache.put(address, shared);
            cachedBytes += shared.bytes();
            var it = cache.entrySet().iterator();
            while (cachedBytes > CACHE_BYTES && it.hasNext()) {
                cachedBytes -= it.next().getValue().bytes();
                it.remove();
            }
        }
        // the line of an interpreted frame's bytecode offset; a frame of V8's compiled code has none here yet
        int line = shared.line(objects.bytecodeOffset(V8FrameStep.rawOffset(value)));
        if (line > 0) {
            runtime.lines.incrementAndGet();
        }
        return new RuntimeFrame(shared.name(), shared.script(), line, List.of(), mapping);
    }

    @Override
    public RuntimeFrame code(long address, boolean callSite, long nowNanos) {
        return null; // V8's own code is named by its frames; stubs by perf maps if any
    }

    @Override
    public synchronized CodeTable codeTable(long now) {
        if (table == null && schedule.due(now)) {
            read(now);
        }
        if (table != null) {
            handedOut = table.generation();
        }
        return table;
    }

    @Override
    public synchronized boolean refreshCode(long now) {
        if (schedule.due(now)) {
            read(now);
        }
        return table != null && table.generation() != handedOut;
    }

    @Override
    public synchronized void unknownCode(long now) {
        schedule.hint(now);
    }

    /** Reads the process's anonymous executable mappings: V8's code space, where its JIT code lies. */
    private void read(long now) {
        long start = nanoTime.getAsLong();
        boolean changed = false;
        try {
            List<long[]> found = new ArrayList<>();
            for (MapEntry m : ProcMaps.read(procRoot, pid)) {
                if (m.anonymousCode()) {
                    found.add(new long[] {m.start(), m.end()});
                }
            }
            changed = !same(found, ranges);
            if (changed && !found.isEmpty()) {
                UnwindTable t = V8Tables.jit("[js] pid " + pid, found, word);
                table = new CodeTable(t, found.stream().map(r -> new CodeTable.Range(r[0], r[1])).toList(), ++generation);
                runtime.tablesBuilt.incrementAndGet();
            }
            ranges = found;
        } catch (ProcessGoneException e) {
            // exiting: the registry forgets it
        } catch (Exception e) {
            runtime.scanFailures.incrementAndGet();
        }
        schedule.read(start, nanoTime.getAsLong(), changed);
    }

    private static boolean same(List<long[]> a, List<long[]> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i)[0] != b.get(i)[0] || a.get(i)[1] != b.get(i)[1]) {
                return false;
            }
        }
        return true;
    }

    @Override
    public void close() {
        try {
            mem.close();
        } catch (IOException e) {
            // a file descriptor only
        }
    }
}
