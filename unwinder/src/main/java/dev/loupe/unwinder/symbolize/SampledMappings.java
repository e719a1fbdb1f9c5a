package dev.loupe.unwinder.symbolize;

/**
 * The layout of the mappings a sample carries (the kernel's walk found them in the process's memory map, bpf_find_vma):
 * {@link #WORDS} longs each, in this order: start, end, the file offset at start, the file's device as the kernel
 * encodes it ({@code MAJOR << 20 | MINOR}), its inode, the kind. The sampler decodes the record into this layout
 * (dev.loupe.bpf.RawSample#mappings; the agent checks the two agree).
 */
public final class SampledMappings {
    public static final int WORDS = 6;
    public static final int START = 0;
    public static final int END = 1;
    public static final int OFFSET = 2;
    public static final int DEVICE = 3;
    public static final int INODE = 4;
    public static final int KIND = 5;
    /** Kinds: a file, the vdso, anonymous executable memory. */
    public static final int FILE = 0;
    public static final int VDSO = 1;
    public static final int ANONYMOUS = 2;

    private SampledMappings() {}

    /** The index of the first word of the mapping containing {@code addr}, -1 if none does. */
    static int find(long[] mappings, long addr) {
        for (int w = 0; w + WORDS <= mappings.length; w += WORDS) {
            if (Long.compareUnsigned(addr, mappings[w + START]) >= 0 && Long.compareUnsigned(addr, mappings[w + END]) < 0) {
                return w;
            }
        }
        return -1;
    }

    /** A kernel-encoded device's major number. */
    static int major(long kernelDevice) {
        return (int) (kernelDevice >>> 20);
    }

    /** A kernel-encoded device's minor number. */
    static int minor(long kernelDevice) {
        return (int) (kernelDevice & 0xfffff);
    }
}
