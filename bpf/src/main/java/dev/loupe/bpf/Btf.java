package dev.loupe.bpf;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Read access to BTF type information (a BPF object's own, or the kernel's vmlinux BTF) through libbpf:
 * enough to check that Java's view of a struct or enum is the compiled one.
 *
 * <p>Memory layout read here (uapi linux/btf.h): {@code struct btf_type {u32 name_off; u32 info; u32 size;}}
 * followed by vlen {@code btf_member {u32 name_off; u32 type; u32 offset;}} for structs, or
 * {@code btf_enum {u32 name_off; s32 val;}} for enums. info: vlen bits 0-15, kind bits 24-28, kind_flag bit 31.
 */
final class Btf implements AutoCloseable {
    static final int KIND_STRUCT = 4;
    static final int KIND_ENUM = 6;
    private static final int KIND_FUNC = 12;
    private static final int TYPE_SIZE = 12;

    /** A struct member: byte offset, byte size (of its type), bitfield size (0 for plain members). */
    record Member(String name, long offset, long size, int bitfieldBits) {}

    record Struct(String name, long size, List<Member> members) {}

    private final MemorySegment btf;
    private final String source;
    private final boolean owned;
    private boolean closed;

    Btf(MemorySegment btf, String source, boolean owned) {
        this.btf = btf;
        this.source = source;
        this.owned = owned;
    }

    /** The running kernel's BTF (/sys/kernel/btf/vmlinux). */
    static Btf vmlinux() throws BpfException {
        return new Btf(LibBpf.BTF_LOAD_VMLINUX.pointer("vmlinux"), "vmlinux", true);
    }

    String source() {
        return source;
    }

    Optional<Struct> struct(String name) throws BpfException {
        Optional<MemorySegment> t = type(name, KIND_STRUCT);
        if (t.isEmpty()) {
            return Optional.empty();
        }
        MemorySegment type = t.get();
        int info = type.get(JAVA_INT, 4);
        int vlen = info & 0xffff;
        boolean kflag = info < 0;
        MemorySegment members = type.reinterpret(TYPE_SIZE + 12L * vlen);
        List<Member> out = new ArrayList<>(vlen);
        for (int i = 0; i < vlen; i++) {
            long o = TYPE_SIZE + 12L * i;
            String mname = name(members.get(JAVA_INT, o));
            int typeId = members.get(JAVA_INT, o + 4);
            int off = members.get(JAVA_INT, o + 8);
            int bitOffset = kflag ? off & 0xffffff : off;
            int bits = kflag ? off >>> 24 : 0;
            long size = (long) LibBpf.BTF_RESOLVE_SIZE.raw(btf, typeId);
            out.add(new Member(mname, bitOffset / 8, size, bits));
        }
        return Optional.of(new Struct(name, Integer.toUnsignedLong(type.get(JAVA_INT, 8)), out));
    }

    /** Whether a function (a kfunc, in the kernel's BTF) of this name is described. */
    boolean hasFunction(String name) throws BpfException {
        return type(name, KIND_FUNC).isPresent();
    }

    /** An enum's enumerators in declaration order, name to value. */
    Optional<Map<String, Long>> enumeration(String name) throws BpfException {
        Optional<MemorySegment> t = type(name, KIND_ENUM);
        if (t.isEmpty()) {
            return Optional.empty();
        }
        int vlen = t.get().get(JAVA_INT, 4) & 0xffff;
        MemorySegment e = t.get().reinterpret(TYPE_SIZE + 8L * vlen);
        Map<String, Long> out = new LinkedHashMap<>();
        for (int i = 0; i < vlen; i++) {
            long o = TYPE_SIZE + 8L * i;
            out.put(name(e.get(JAVA_INT, o)), (long) e.get(JAVA_INT, o + 4));
        }
        return Optional.of(out);
    }

    private Optional<MemorySegment> type(String name, int kind) throws BpfException {
        check();
        int id = (int) LibBpf.BTF_FIND_BY_NAME_KIND.raw(btf, name, kind);
        if (id < 0) {
            return Optional.empty();
        }
        return Optional.of(LibBpf.BTF_TYPE_BY_ID.pointer(name + " in " + source, btf, id).reinterpret(TYPE_SIZE));
    }

    private String name(int offset) throws BpfException {
        return LibBpf.BTF_NAME_BY_OFFSET.pointer("name " + offset, btf, offset).reinterpret(4096).getString(0);
    }

    private void check() {
        if (closed) {
            throw new IllegalStateException("BTF of " + source + " is closed");
        }
    }

    @Override
    public void close() {
        if (owned && !closed) {
            LibBpf.BTF_FREE.raw(btf);
        }
        closed = true;
    }
}
