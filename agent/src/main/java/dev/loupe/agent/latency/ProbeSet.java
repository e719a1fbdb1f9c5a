package dev.loupe.agent.latency;

import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.agent.regression.FunctionKey;
import dev.loupe.bpf.BpfException;
import dev.loupe.bpf.LatencyHistogram;
import dev.loupe.bpf.LatencyProbes;
import dev.loupe.unwinder.proc.FileKey;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What is attached in the kernel, and the counts of what was. A plan ({@link #reconcile}) is applied as a
 * difference: functions already attached as planned keep their probe and counts; planned ones not attached are
 * attached under a free id; attached ones no longer planned are detached, and their final counts kept per
 * (binary, function), so /metrics stays cumulative across reloads and deploys.
 *
 * <p>A function still planned but now in another file (a deploy: a new binary at the path) keeps its old probe
 * while processes of the old build still call it: it drains, and is detached once it has had no call for
 * {@code drainIdle}. Ids are reused (the kernel's maps have room for {@code capacity}); an id is free again
 * only after its final counts were read.
 */
final class ProbeSet {
    private static final System.Logger LOG = System.getLogger(ProbeSet.class.getName());

    /** What {@link #reconcile} did. */
    record Change(List<ProbedFunction> attached, List<ProbedFunction> detached, List<ProbedFunction> draining,
                  List<String> problems) {
        boolean isEmpty() {
            return attached.isEmpty() && detached.isEmpty() && draining.isEmpty();
        }
    }

    /** The calls of one probe since the last {@link #fineDeltas()}. */
    record FineDelta(ProbedFunction function, FineHistogram calls) {}

    private final LatencyProbes probes;
    private final int capacity;
    private final long drainIdleNanos;
    private final BitSet used = new BitSet();
    private final Map<Integer, ProbedFunction> active = new LinkedHashMap<>();
    /** Old builds' probes: id → monotonic time of their last call (or of the deploy). */
    private final Map<Integer, ProbedFunction> draining = new LinkedHashMap<>();
    private int waitingForRoom;
    private final Map<Integer, Long> lastCallNanos = new HashMap<>();
    private final Map<Integer, long[]> lastFine = new HashMap<>();
    /** Detached probes' last calls, reported by the next {@link #fineDeltas}. */
    private final List<FineDelta> pending = new ArrayList<>();
    /** Final coarse counts of detached probes, per function. */
    private final Map<FunctionKey, LatencyHistogram> retired = new HashMap<>();
    /** Every function ever attached, in first-attach order (shown on /metrics from then on). */
    private final Set<FunctionKey> ever = new LinkedHashSet<>();
    /** Detached probes by id until the next interval, for groups drained after their detach. */
    private final Map<Integer, ProbedFunction> recentlyDetached = new HashMap<>();

    ProbeSet(LatencyProbes probes, int capacity, java.time.Duration drainIdle) {
        this.probes = probes;
        this.capacity = capacity;
        this.drainIdleNanos = drainIdle.toNanos();
    }

    /** Makes the kernel's probes match {@code planned} (ids in it are ignored); never throws for one bad probe. */
    Change reconcile(List<ProbedFunction> planned, long nowNanos) throws BpfException {
        Map<ProbedFunction.Identity, ProbedFunction> want = new LinkedHashMap<>();
        for (ProbedFunction f : planned) {
            want.putIfAbsent(f.identity(), f);
        }
        Set<ProbedFunction.Identity> have = new HashSet<>();
        Set<FunctionKey> plannedKeys = new HashSet<>();
        for (ProbedFunction f : want.values()) {
            plannedKeys.add(f.key());
        }
        List<ProbedFunction> detached = new ArrayList<>();
        List<ProbedFunction> drainingNow = new ArrayList<>();
        for (ProbedFunction f : List.copyOf(active.values())) {
            if (want.containsKey(f.identity())) {
                have.add(f.identity());
                continue;
            }
            active.remove(f.id());
            if (plannedKeys.contains(f.key()) && !f.file().equals(FileKey.NONE)
                    && want.values().stream().anyMatch(w -> w.key().equals(f.key()) && !w.file().equals(f.file()))) {
                draining.put(f.id(), f); // a new build of the same function: let the old processes finish
                lastCallNanos.put(f.id(), nowNanos);
                drainingNow.add(f);
            } else {
                detach(List.of(f));
                detached.add(f);
            }
        }
        // A drained build planned again (a rollback to a file still there) is active again.
        for (ProbedFunction f : List.copyOf(draining.values())) {
            if (want.containsKey(f.identity()) && !have.contains(f.identity())) {
                draining.remove(f.id());
                lastCallNanos.remove(f.id());
                active.put(f.id(), f);
                have.add(f.identity());
            }
        }
        List<ProbedFunction> attached = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        // Room for the new build before the old one's stragglers: the oldest draining probes, in one detach (each
        // detach reads every probe's fine histogram). Their ids are free once this interval's groups are drained
        // (they may still name them), so what does not fit now waits for the interval's end, when ProbeManager
        // plans again.
        long missing = want.keySet().stream().filter(i -> !have.contains(i)).count();
        int room = 0; // ids neither used, detached this interval nor still being detached
        for (int id = used.nextClearBit(0); id < capacity; id = used.nextClearBit(id + 1)) {
            room += recentlyDetached.containsKey(id) || probes.closing(id) ? 0 : 1;
        }
        detachOldestDraining((int) Math.min(Math.max(0, missing - room), draining.size()));
        waitingForRoom = 0;
        for (ProbedFunction f : want.values()) {
            if (have.contains(f.identity())) {
                continue;
            }
            int id = freeId();
            if (id >= capacity && (!recentlyDetached.isEmpty() || closingAny())) {
                waitingForRoom++;
                continue;
            }
            if (id >= capacity) {
                problems.add("probe " + f.binary() + ": " + f.function() + ": no room: " + capacity
                        + " probes are attached or draining (probes-max-functions)");
                continue;
            }
            ProbedFunction withId = f.withId(id);
            try {
                probes.attach(withId.spec());
            } catch (BpfException | RuntimeException e) {
                problems.add("probe " + f.binary() + ": " + f.function() + ": cannot attach: " + e.getMessage());
                continue;
            }
            used.set(id);
            active.put(id, withId);
            lastFine.put(id, new long[LatencyProbes.FINE_BUCKETS]);
            ever.add(withId.key());
            attached.add(withId);
        }
        return new Change(attached, detached, drainingNow, problems);
    }

    private boolean closingAny() {
        for (int id = used.nextClearBit(0); id < capacity; id = used.nextClearBit(id + 1)) {
            if (probes.closing(id)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Functions the last {@link #reconcile} could not attach yet because the ids it freed by detaching previous
     * builds' probes stay taken until {@link #endInterval} and until the kernel has removed their links; after
     * that, reconciling again attaches them.
     */
    int waitingForRoom() {
        return waitingForRoom;
    }

    /** Detaches the {@code n} draining probes called least recently, at once. */
    private void detachOldestDraining(int n) throws BpfException {
        if (n <= 0) {
            return;
        }
        List<ProbedFunction> oldest = draining.values().stream()
                .sorted(java.util.Comparator.comparingLong(f -> lastCallNanos.get(f.id()))).limit(n).toList();
        for (ProbedFunction f : oldest) {
            draining.remove(f.id());
        }
        detach(oldest);
        LOG.log(System.Logger.Level.INFO, "probes: " + n + " of the previous builds' probes detached early to make room"
                + " (e.g. " + oldest.get(0).binary() + " " + oldest.get(0).function() + ")");
    }

    /**
     * Detaches and keeps the final counts: the fine ones are read before the detach, the coarse ones after it
     * (the kernel keeps a detached probe's counts until the next read).
     */
    private void detach(List<ProbedFunction> gone) throws BpfException {
        if (gone.isEmpty()) {
            return;
        }
        Map<Integer, long[]> fine = probes.readFineHistograms();
        for (ProbedFunction f : gone) {
            FineDelta last = delta(f, fine.get(f.id()));
            if (last != null) {
                pending.add(last);
            }
            probes.detach(f.id());
        }
        Map<Integer, LatencyHistogram> finals = probes.readHistograms(); // also clears the detached ones
        for (ProbedFunction f : gone) {
            LatencyHistogram h = finals.get(f.id());
            if (h != null) {
                retired.merge(f.key(), h, ProbeSet::sum);
            }
            used.clear(f.id());
            lastCallNanos.remove(f.id());
            recentlyDetached.put(f.id(), f);
        }
    }

    /**
     * Per probe attached or draining (and those detached since the last call): the calls since the last call.
     * Draining probes idle for longer than drainIdle are detached here (after their last calls were read).
     */
    List<FineDelta> fineDeltas(long nowNanos) throws BpfException {
        Map<Integer, long[]> now = probes.readFineHistograms();
        List<ProbedFunction> idle = new ArrayList<>();
        List<FineDelta> out = new ArrayList<>(pending);
        pending.clear();
        for (var e : now.entrySet()) {
            ProbedFunction f = active.containsKey(e.getKey()) ? active.get(e.getKey()) : draining.get(e.getKey());
            if (f == null) {
                continue;
            }
            FineDelta d = delta(f, e.getValue());
            if (d != null) {
                out.add(d);
                if (draining.containsKey(f.id())) {
                    lastCallNanos.put(f.id(), nowNanos);
                }
            }
            if (draining.containsKey(f.id()) && nowNanos - lastCallNanos.get(f.id()) >= drainIdleNanos) {
                idle.add(f);
            }
        }
        for (ProbedFunction f : idle) {
            draining.remove(f.id());
            LOG.log(System.Logger.Level.INFO, "probes: " + f.binary() + " " + f.function() + " of build "
                    + (f.buildId().isEmpty() ? "(no build id)" : f.buildId()) + ": no call for "
                    + drainIdleNanos / 1_000_000_000L + " s, detached");
        }
        detach(idle);
        out.addAll(pending);
        pending.clear();
        return out;
    }

    /** The calls since the last read of probe {@code f}, given its cumulative counts now; null if none. */
    private FineDelta delta(ProbedFunction f, long[] counts) {
        long[] before = lastFine.get(f.id());
        if (counts == null || before == null) {
            return null;
        }
        long[] delta = new long[counts.length];
        long calls = 0;
        for (int i = 0; i < counts.length; i++) {
            delta[i] = Math.max(0, counts[i] - before[i]);
            calls += delta[i];
        }
        lastFine.put(f.id(), counts);
        return calls > 0 ? new FineDelta(f, FineHistogram.ofCounts(delta)) : null;
    }

    /**
     * Forgets detached probes; call after the interval's groups were drained and its profile built. Their ids
     * are free from then on (not before: groups drained after the detach still name them).
     */
    void endInterval() {
        for (int id : recentlyDetached.keySet()) {
            lastFine.remove(id);
        }
        recentlyDetached.clear();
    }

    /** The lowest id neither attached, draining, detached in this interval nor still being detached in the kernel. */
    private int freeId() {
        int id = used.nextClearBit(0);
        while (recentlyDetached.containsKey(id) || probes.closing(id)) {
            id = used.nextClearBit(id + 1);
        }
        return id;
    }

    /** Detaches the probes of {@code pid=} processes that exited; returns them. */
    List<ProbedFunction> detachExited(java.util.function.IntPredicate alive) throws BpfException {
        List<ProbedFunction> gone = new ArrayList<>();
        for (ProbedFunction f : List.copyOf(active.values())) {
            if (f.spec().pid() != -1 && !alive.test(f.spec().pid())) {
                active.remove(f.id());
                gone.add(f);
            }
        }
        detach(gone);
        return gone;
    }

    /** The function a probe id names now, or named until its detach in this interval. */
    ProbedFunction byId(int id) {
        ProbedFunction f = active.get(id);
        if (f == null) {
            f = draining.get(id);
        }
        return f != null ? f : recentlyDetached.get(id);
    }

    /** Every probe that can still report calls (attached or draining), and those detached this interval. */
    List<ProbedFunction> known() {
        List<ProbedFunction> out = new ArrayList<>(active.values());
        out.addAll(draining.values());
        out.addAll(recentlyDetached.values());
        return out;
    }

    List<ProbedFunction> active() {
        return List.copyOf(active.values());
    }

    int attachedCount() {
        return active.size() + draining.size();
    }

    /**
     * Per function ever attached, in first-attach order: its cumulative counts (detached probes' final counts
     * plus {@code live}, the kernel's histograms of attached probes by id).
     */
    Map<FunctionKey, LatencyHistogram> totals(Map<Integer, LatencyHistogram> live) {
        Map<FunctionKey, LatencyHistogram> out = new LinkedHashMap<>();
        for (FunctionKey k : ever) {
            LatencyHistogram r = retired.get(k);
            out.put(k, r != null ? r : new LatencyHistogram(-1, new long[LatencyHistogram.BUCKETS], 0, 0));
        }
        for (var e : live.entrySet()) {
            ProbedFunction f = active.get(e.getKey());
            if (f == null) {
                f = draining.get(e.getKey());
            }
            if (f != null) {
                out.merge(f.key(), e.getValue(), ProbeSet::sum);
            }
        }
        return out;
    }

    /** Detaches everything (final counts kept). */
    void detachAll() throws BpfException {
        List<ProbedFunction> all = new ArrayList<>(active.values());
        all.addAll(draining.values());
        active.clear();
        draining.clear();
        detach(all);
    }

    private static LatencyHistogram sum(LatencyHistogram a, LatencyHistogram b) {
        long[] buckets = a.buckets();
        long[] other = b.buckets();
        for (int i = 0; i < buckets.length; i++) {
            buckets[i] += other[i];
        }
        return new LatencyHistogram(-1, buckets, a.sumNanos() + b.sumNanos(), a.count() + b.count());
    }
}
