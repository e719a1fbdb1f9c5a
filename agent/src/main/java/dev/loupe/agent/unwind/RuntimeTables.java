package dev.loupe.agent.unwind;

import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.runtime.CodeTable;
import dev.loupe.unwinder.runtime.ProcessRuntimes;
import dev.loupe.unwinder.runtime.RuntimeRegistry;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The kernel side of runtimes' code tables (a JIT's code heaps): per registered process, the {@link TableEntry} of
 * each table its runtimes give ({@link ProcessRuntimes#codeTables}), replaced when a runtime's code changed. A
 * replaced table leaves the kernel at once (no other process can use it); when a process goes, so do its tables.
 * When to read a runtime's code again is the runtime's own schedule; this asks sampled processes' runtimes
 * ({@link #changed}) and passes on hints from samples ({@link #unknownCode}). It names no runtime.
 *
 * <p>Uploader thread only.
 */
final class RuntimeTables {
    /** Processes not sampled for this long are not asked to read their code again (their tables stay). */
    static final long SAMPLED_WITHIN_NANOS = dev.loupe.unwinder.runtime.RescanSchedule.MAX_RESCAN_NANOS;

    /** A process's runtimes and the tables it was last registered with. */
    private static final class State {
        final long startTicks;
        final ProcessRuntimes runtimes;
        final List<Table> tables = new ArrayList<>();

        State(long startTicks, ProcessRuntimes runtimes) {
            this.startTicks = startTicks;
            this.runtimes = runtimes;
        }
    }

    /** A runtime's code table as the kernel holds it: the ranges it covers and its entry. */
    record Table(TableEntry entry, CodeTable code) {
        boolean covers(MapEntry m) {
            return code.covers(m.start(), m.end());
        }
    }

    private final RuntimeRegistry registry;
    private final java.util.function.LongSupplier nanoTime;
    private final Map<Integer, State> states = new HashMap<>();
    private final List<TableEntry> retired = new ArrayList<>();

    RuntimeTables(RuntimeRegistry registry, java.util.function.LongSupplier nanoTime) {
        this.registry = registry;
        this.nanoTime = nanoTime;
    }

    /**
     * The runtimes' tables for a process about to be registered (read now where there is none yet or the code
     * changed); empty when it runs no runtime with tables: its anonymous code then keeps frame pointers.
     */
    List<Table> forProcess(int pid, long startTicks, List<MapEntry> exec) {
        State s = states.get(pid);
        if (s != null && s.startTicks != startTicks) {
            forget(pid);
            s = null;
        }
        ProcessRuntimes runtimes = registry.of(pid, startTicks, exec);
        if (s == null || s.runtimes != runtimes) { // first registration, or a runtime found since (mappings changed)
            if (s != null) {
                retired.addAll(s.tables.stream().map(Table::entry).toList());
            }
            s = new State(startTicks, runtimes);
            states.put(pid, s);
        }
        List<CodeTable> current = runtimes.codeTables(nanoTime.getAsLong());
        List<Table> tables = new ArrayList<>(current.size());
        for (CodeTable c : current) {
            Table known = null;
            for (Table t : s.tables) {
                if (t.code() == c) {
                    known = t;
                }
            }
            tables.add(known != null ? known : entry(pid, startTicks, c));
        }
        for (Table t : s.tables) {
            if (!tables.contains(t)) {
                retired.add(t.entry());
            }
        }
        s.tables.clear();
        s.tables.addAll(tables);
        return tables;
    }

    /**
     * The table a runtime gives for the file {@code m} maps, in place of the file's {@code own}, for every process
     * (an interpreter binary's); null: the file's own.
     */
    UnwindTable fileTable(MapEntry m, java.nio.file.Path file, UnwindTable own) throws java.io.IOException {
        for (dev.loupe.unwinder.runtime.ManagedRuntime r : registry.runtimes()) {
            if (r.detectFile(m, file)) {
                java.util.Optional<UnwindTable> t = r.fileTable(m, file, own);
                if (t.isPresent()) {
                    return t.get();
                }
            }
        }
        return null;
    }

    /** Whether a runtime is detected from this one file mapping alone: a process mapping it needs its registration. */
    boolean runtimeFile(MapEntry m) {
        List<MapEntry> one = List.of(m);
        for (dev.loupe.unwinder.runtime.ManagedRuntime r : registry.runtimes()) {
            if (r.detect(one)) {
                return true;
            }
        }
        return false;
    }

    private static Table entry(int pid, long startTicks, CodeTable c) {
        String name = c.table().name();
        TableEntry entry = new TableEntry(new CodeKey(pid, startTicks, name, c.generation()), name);
        entry.retained = c.table();
        entry.pcBase = c.table().pcBase();
        entry.pages = c.table().pageCount();
        entry.rows = c.table().rowCount();
        entry.rules = c.table().ruleCount();
        return new Table(entry, c);
    }

    /** The processes among {@code sampled} whose runtimes' code changed: they need registering again. */
    List<Integer> changed(Iterable<Integer> sampled) {
        List<Integer> changed = new ArrayList<>();
        long now = nanoTime.getAsLong();
        for (int pid : sampled) {
            State s = states.get(pid);
            if (s != null && !s.runtimes.isEmpty() && s.runtimes.refreshCode(now)) {
                changed.add(pid);
            }
        }
        return changed;
    }

    /** A sample of {@code pid} showed code its tables do not describe: its runtimes read their code again soon. */
    void unknownCode(int pid) {
        State s = states.get(pid);
        if (s != null) {
            s.runtimes.unknownCode(nanoTime.getAsLong());
        }
    }

    /** Tables replaced by newer ones since the last call: the caller drops them from the kernel once unused. */
    List<TableEntry> takeRetired() {
        List<TableEntry> r = List.copyOf(retired);
        retired.clear();
        return r;
    }

    /** The process exited or was replaced: its tables go with it (its runtimes are the registry's to close). */
    void forget(int pid) {
        State s = states.remove(pid);
        if (s != null) {
            s.tables.forEach(t -> retired.add(t.entry()));
        }
    }

    /** The process {@code pid} that started at {@code startTicks} exited: as {@link #forget(int)}, if it is the one held. */
    void forget(int pid, long startTicks) {
        State s = states.get(pid);
        if (s != null && s.startTicks == startTicks) {
            forget(pid);
        }
    }

    /** Processes whose runtimes' tables are held (tests). */
    int size() {
        return states.size();
    }

    /** A runtime table's cache key: never equal to a file's. */
    record CodeKey(int pid, long startTicks, String name, int generation) {}
}
