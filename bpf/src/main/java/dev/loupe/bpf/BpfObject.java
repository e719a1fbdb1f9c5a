package dev.loupe.bpf;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.Map;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A compiled BPF object (one {@code .bpf.c}): open it, size its maps, check its ABI, load it, then find
 * its programs and maps. Closing it unloads programs and maps; close links first.
 */
public final class BpfObject implements AutoCloseable {
    private final Arena arena; // the ELF copy and the name libbpf keeps pointing at
    private final String name;
    private final MemorySegment object;
    private final Map<String, BpfMap> maps = new HashMap<>();
    private final Map<String, BpfProgram> programs = new HashMap<>();
    private boolean loaded;
    private boolean closed;

    private BpfObject(Arena arena, String name, MemorySegment object) {
        this.arena = arena;
        this.name = name;
        this.object = object;
    }

    /** Opens an object from its ELF bytes (not yet loaded into the kernel). */
    public static BpfObject open(String name, byte[] elf) throws BpfException {
        String why = LibBpf.loadError();
        if (why != null) {
            throw new BpfException(why, 0);
        }
        Arena a = Arena.ofShared();
        try {
            MemorySegment elfSeg = a.allocate(elf.length, 8);
            MemorySegment.copy(elf, 0, elfSeg, JAVA_BYTE, 0, elf.length);
            // struct bpf_object_open_opts (libbpf 1.1): sz@0, object_name@8, 80 bytes in all.
            MemorySegment opts = a.allocate(80, 8);
            opts.set(JAVA_LONG, 0, 80);
            opts.set(ADDRESS, 8, a.allocateFrom(name));
            MemorySegment obj = LibBpf.OBJECT_OPEN_MEM.pointer(name, elfSeg, (long) elf.length, opts);
            return new BpfObject(a, name, obj);
        } catch (BpfException | RuntimeException e) {
            a.close();
            throw e;
        }
    }

    /** Opens an object shipped as a class-path resource (compiled by clang during the build). */
    public static BpfObject fromResource(Class<?> owner, String resource, String name) throws BpfException {
        try (InputStream in = owner.getResourceAsStream(resource)) {
            if (in == null) {
                throw new BpfException("BPF object " + resource + " is not on the classpath (build bpf/ with clang)", 0);
            }
            return open(name, in.readAllBytes());
        } catch (IOException e) {
            throw new BpfException("cannot read BPF object " + resource + ": " + e.getMessage(), 0);
        }
    }

    public String name() {
        return name;
    }

    /** Sets a map's size; only before {@link #load()}. */
    public void resizeMap(String mapName, int maxEntries) throws BpfException {
        checkOpen();
        if (loaded) {
            throw new IllegalStateException("map " + mapName + " can only be resized before load");
        }
        LibBpf.MAP_SET_MAX_ENTRIES.status(mapName + ", " + maxEntries, mapHandle(mapName), maxEntries);
    }

    /**
     * Sets the contents of a global-data section's map ({@code .rodata.NAME}: {@code const volatile} globals)
     * before {@link #load()}; {@code value} must be exactly the section's size. A read-only section is frozen
     * at load, so the verifier knows the values and drops the branches they rule out.
     */
    public void setSectionData(String section, MemorySegment value) throws BpfException {
        checkOpen();
        if (loaded) {
            throw new IllegalStateException("section " + section + " can only be set before load");
        }
        LibBpf.MAP_SET_INITIAL_VALUE.status(section + ", " + value.byteSize() + " bytes", mapHandle(section), value,
                value.byteSize());
    }

    /**
     * Makes this object, before {@link #load()}, use every map of {@code other} (loaded, of the same BPF source)
     * instead of creating its own: its programs then share the other's maps, so one can be added to a running
     * object later (the off-CPU program, at a reload) without verifying the others again.
     */
    public void shareMapsOf(BpfObject other) throws BpfException {
        checkOpen();
        if (loaded) {
            throw new IllegalStateException("maps can only be shared before load");
        }
        MemorySegment m = MemorySegment.NULL;
        while (true) {
            m = (MemorySegment) LibBpf.OBJECT_NEXT_MAP.raw(object, m);
            if (m.address() == 0) {
                return;
            }
            String mapName = ((MemorySegment) LibBpf.MAP_NAME.raw(m)).reinterpret(512).getString(0);
            LibBpf.MAP_REUSE_FD.status(mapName, m, other.map(mapName).fd());
        }
    }

    /** Whether {@link #load()} verifies and loads this program (all do by default); only before load. */
    public void autoload(String programName, boolean autoload) throws BpfException {
        checkOpen();
        if (loaded) {
            throw new IllegalStateException("program " + programName + " can only be chosen before load");
        }
        MemorySegment h = LibBpf.FIND_PROGRAM.pointer(programName, object, programName);
        LibBpf.PROGRAM_SET_AUTOLOAD.status(programName + ", " + autoload, h, autoload);
    }

    /** The object's own BTF (its types as compiled), for ABI checks; valid until close. */
    Btf btf() throws BpfException {
        checkOpen();
        return new Btf(LibBpf.OBJECT_BTF.pointer(name, object), name, false);
    }

    /** Verifies and loads every program (see {@link #autoload}) and creates every map. */
    public void load() throws BpfException {
        checkOpen();
        LibBpf.OBJECT_LOAD.status(name, object);
        loaded = true;
    }

    public synchronized BpfProgram program(String programName) throws BpfException {
        checkLoaded();
        BpfProgram p = programs.get(programName);
        if (p == null) {
            MemorySegment h = LibBpf.FIND_PROGRAM.pointer(programName, object, programName);
            p = new BpfProgram(programName, h, LibBpf.PROGRAM_FD.status(programName, h));
            programs.put(programName, p);
        }
        return p;
    }

    public synchronized BpfMap map(String mapName) throws BpfException {
        checkLoaded();
        BpfMap m = maps.get(mapName);
        if (m == null) {
            MemorySegment h = mapHandle(mapName);
            m = new BpfMap(mapName, LibBpf.MAP_FD.status(mapName, h), (int) LibBpf.MAP_TYPE.raw(h),
                    (int) LibBpf.MAP_KEY_SIZE.raw(h), (int) LibBpf.MAP_VALUE_SIZE.raw(h),
                    (int) LibBpf.MAP_MAX_ENTRIES.raw(h));
            maps.put(mapName, m);
        }
        return m;
    }

    private MemorySegment mapHandle(String mapName) throws BpfException {
        return LibBpf.FIND_MAP.pointer(mapName, object, mapName);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("BPF object " + name + " is closed");
        }
    }

    private void checkLoaded() {
        checkOpen();
        if (!loaded) {
            throw new IllegalStateException("BPF object " + name + " is not loaded");
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        LibBpf.OBJECT_CLOSE.raw(object);
        arena.close();
    }
}
