package dev.loupe.agent.latency;

import dev.loupe.agent.labels.CgroupLabels;

import dev.loupe.unwinder.symbolize.Frame;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Calls summed per function, process, goroutine, caller stack, bucket and fine bucket for one profile (an
 * interval or one HTTP capture), filled from the kernel's groups as they are drained. Bounded: a group beyond
 * {@code maxGroups} is dropped and counted (the histograms on /metrics stay exact).
 */
final class LatencyGroups {
    /**
     * @param bucket     the 2^k µs histogram bucket
     * @param fineBucket the fine histogram bucket (FineHistogram's index)
     * @param callers    symbolized callers of the function, innermost first (empty with stacks off)
     * @param stackLost  stacks were on but this call's stack was not available
     */
    record Key(int probe, int pid, long goid, int bucket, int fineBucket, List<Frame> callers, boolean stackLost) {}

    static final class Sums {
        long calls;
        long nanos;
        String comm;
        CgroupLabels cgroup = CgroupLabels.NONE;
    }

    private final Map<Key, Sums> groups = new HashMap<>();
    private final int maxGroups;
    private long dropped;

    LatencyGroups(int maxGroups) {
        this.maxGroups = maxGroups;
    }

    /** Adds calls to a group; false (and counted) if the group is new and there is no room. */
    boolean add(Key key, String comm, long calls, long nanos) {
        return add(key, comm, CgroupLabels.NONE, calls, nanos);
    }

    /** As {@link #add(Key, String, long, long)}, with the process's unit and container (kept from the first add). */
    boolean add(Key key, String comm, CgroupLabels cgroup, long calls, long nanos) {
        Sums s = groups.get(key);
        if (s == null) {
            if (groups.size() >= maxGroups) {
                dropped += calls;
                return false;
            }
            s = new Sums();
            s.comm = comm;
            s.cgroup = cgroup;
            groups.put(key, s);
        }
        s.calls += calls;
        s.nanos += nanos;
        return true;
    }

    Collection<Map.Entry<Key, Sums>> entries() {
        return groups.entrySet();
    }

    /** Calls left out because the groups were full. */
    long droppedCalls() {
        return dropped;
    }

    int size() {
        return groups.size();
    }
}
