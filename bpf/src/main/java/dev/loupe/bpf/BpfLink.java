package dev.loupe.bpf;

import java.lang.foreign.MemorySegment;

/** An attachment of a program (perf event, uprobe, uretprobe); closing it detaches. */
public final class BpfLink implements AutoCloseable {
    private final String description;
    private MemorySegment link;

    BpfLink(String description, MemorySegment link) {
        this.description = description;
        this.link = link;
    }

    @Override
    public synchronized void close() {
        if (link != null) {
            LibBpf.LINK_DESTROY.raw(link); // a perf_event link also closes its perf fd
            link = null;
        }
    }

    @Override
    public String toString() {
        return description;
    }
}
