package dev.loupe.agent.unwind;

import dev.loupe.bpf.UnwindMaps;

import java.util.ArrayList;
import java.util.List;

/** The BPF sampler's unwind maps as an {@link UnwindTarget}. */
public final class KernelUnwindTarget implements UnwindTarget {
    private final UnwindMaps maps;

    public KernelUnwindTarget(UnwindMaps maps) {
        this.maps = maps;
    }

    @Override
    public Capacity capacity() {
        UnwindMaps.Capacity c = maps.capacity();
        return new Capacity(c.tables(), c.pages(), c.rows(), c.rules(), c.mappings(), c.processes(), c.files());
    }

    @Override
    public void writeTable(int tableId, long pcBase, int pageStart, int[] pageWords, int rowStart, int[] rowWords,
                           int ruleStart, long[] ruleWords) throws Exception {
        maps.writeTable(tableId, pcBase, pageStart, pageWords, rowStart, rowWords, ruleStart, ruleWords);
    }

    @Override
    public void clearTable(int tableId) throws Exception {
        maps.clearTable(tableId);
    }

    @Override
    public void writeMappings(int first, List<Mapping> sorted) throws Exception {
        List<UnwindMaps.ExecMapping> out = new ArrayList<>(sorted.size());
        for (Mapping m : sorted) {
            out.add(new UnwindMaps.ExecMapping(m.start(), m.end(), m.bias(), m.kind(), m.tableOrReason()));
        }
        maps.writeMappings(first, out);
    }

    @Override
    public void setProcess(int tgid, long startTicks, int first, int count) throws Exception {
        maps.setProcess(tgid, startTicks, first, count);
    }

    @Override
    public void removeProcess(int tgid) throws Exception {
        maps.removeProcess(tgid);
    }

    @Override
    public void setFile(long device, long inode, long size, long mtimeNanos, int kind, int tableOrReason, int flags,
                        long vaddrDelta) throws Exception {
        maps.setFile(device, inode, size, mtimeNanos, kind, tableOrReason, flags, vaddrDelta);
    }

    @Override
    public void removeFile(long device, long inode) throws Exception {
        maps.removeFile(device, inode);
    }
}
