package dev.loupe.agent.regression;

import java.io.IOException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeSet;

/**
 * When each function's baselines file is written: a function whose state changed at most every
 * {@value #EVERY_MINUTES} minutes, each at its own phase (by a hash of its name, so one call writes a few files,
 * not all), at once after a deploy, and everything changed at the end; forgotten functions' files are deleted.
 * A failed write is logged once until writing works again, and retried at the next call.
 */
final class WriteSchedule {
    private static final System.Logger LOG = System.getLogger(WriteSchedule.class.getName());
    static final int EVERY_MINUTES = 5;
    private static final long EVERY_MILLIS = EVERY_MINUTES * 60_000L;

    /** A function's pending write. */
    private static final class Pending {
        boolean changed;
        boolean urgent;
        long due;

        Pending(long due) {
            this.due = due;
        }
    }

    private final BaselineStore store;
    private final Map<FunctionKey, Pending> pending = new HashMap<>();
    private final TreeSet<FunctionKey> forgotten = new TreeSet<>();
    private boolean failing;

    WriteSchedule(BaselineStore store) {
        this.store = store;
    }

    /** A function loaded or newly seen: its first write is due at its phase within the period. */
    void known(FunctionKey key, long now) {
        pending.put(key, new Pending(now + Math.floorMod(key.hashCode(), EVERY_MILLIS)));
        forgotten.remove(key);
    }

    void changed(FunctionKey key) {
        pending.get(key).changed = true;
    }

    void deployed(FunctionKey key) {
        Pending p = pending.get(key);
        p.changed = true;
        p.urgent = true;
    }

    void forget(FunctionKey key) {
        pending.remove(key);
        forgotten.add(key);
    }

    /** Writes what is due at {@code now} ({@code all}: everything changed) of {@code states}. */
    void write(long now, boolean all, Map<FunctionKey, FunctionBaselines> states) {
        boolean directoryChanged = false;
        try {
            for (Iterator<FunctionKey> it = forgotten.iterator(); it.hasNext(); ) {
                store.delete(it.next());
                it.remove();
                directoryChanged = true;
            }
            for (FunctionBaselines f : states.values()) {
                Pending p = pending.get(f.key);
                if (p.changed && (all || p.urgent || now >= p.due)) {
                    store.write(f);
                    p.changed = false;
                    p.urgent = false;
                    p.due = now + EVERY_MILLIS;
                    directoryChanged = true;
                }
            }
            if (directoryChanged) {
                store.syncDirectory();
            }
            if (failing) {
                failing = false;
                LOG.log(System.Logger.Level.INFO, "latency baselines: writing to " + store.directory() + " works again");
            }
        } catch (IOException | RuntimeException e) {
            if (!failing) {
                failing = true;
                LOG.log(System.Logger.Level.WARNING, "latency baselines: cannot write to " + store.directory()
                        + " (retried each interval; the baselines live on in memory): " + e);
            }
        }
    }
}
