package dev.loupe.unwinder.runtime;

import java.util.ArrayList;
import java.util.List;

/**
 * The runtimes one process runs, in the order the agent lists them (the first that names an address wins): what the
 * symbolizer and the unwind table uploader ask, so neither names a runtime. Immutable; the processes it holds are
 * thread-safe.
 */
public final class ProcessRuntimes {
    public static final ProcessRuntimes NONE = new ProcessRuntimes(List.of(), List.of());

    private final List<ManagedRuntime> runtimes;
    private final List<RuntimeProcess> processes;

    ProcessRuntimes(List<ManagedRuntime> runtimes, List<RuntimeProcess> processes) {
        this.runtimes = List.copyOf(runtimes);
        this.processes = List.copyOf(processes);
    }

    public boolean isEmpty() {
        return processes.isEmpty();
    }

    /** The frame a runtime names for a tagged frame; null if no runtime of this process writes its type or names it. */
    public RuntimeFrame taggedFrame(FrameType type, long value) {
        for (int i = 0; i < processes.size(); i++) {
            if (runtimes.get(i).frameTypes().contains(type)) {
                return processes.get(i).taggedFrame(type, value);
            }
        }
        return null;
    }

    /** Whether one of this process's runtimes writes frames of {@code type}. */
    public boolean writes(FrameType type) {
        for (ManagedRuntime r : runtimes) {
            if (r.frameTypes().contains(type)) {
                return true;
            }
        }
        return false;
    }

    /** The first runtime's name for code at {@code address} in memory no file backs; null if none knows it. */
    public RuntimeFrame code(long address, boolean callSite, long nowNanos) {
        for (RuntimeProcess p : processes) {
            RuntimeFrame f = p.code(address, callSite, nowNanos);
            if (f != null) {
                return f;
            }
        }
        return null;
    }

    /** Whether a runtime's frames stand for this native function. */
    public boolean replacesNative(String function) {
        for (RuntimeProcess p : processes) {
            if (p.replacesNative(function)) {
                return true;
            }
        }
        return false;
    }

    /** The runtimes' current code tables (scanned first where none was). */
    public List<CodeTable> codeTables(long nowNanos) {
        List<CodeTable> out = new ArrayList<>(1);
        for (RuntimeProcess p : processes) {
            CodeTable t = p.codeTable(nowNanos);
            if (t != null) {
                out.add(t);
            }
        }
        return out;
    }

    /** Rescans what is due; true when a runtime has a newer code table. */
    public boolean refreshCode(long nowNanos) {
        boolean changed = false;
        for (RuntimeProcess p : processes) {
            changed |= p.refreshCode(nowNanos);
        }
        return changed;
    }

    /** A sample showed unknown code: each runtime rescans soon. */
    public void unknownCode(long nowNanos) {
        for (RuntimeProcess p : processes) {
            p.unknownCode(nowNanos);
        }
    }
}
