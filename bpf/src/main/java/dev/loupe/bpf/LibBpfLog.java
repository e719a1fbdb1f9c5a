package dev.loupe.bpf;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * What libbpf prints, kept per calling thread so a failing call's exception carries libbpf's own lines
 * (the verifier log, a missing BTF type...). libbpf's print hook is process-global, hence one instance;
 * its state is this object's, guarded by its monitor.
 */
final class LibBpfLog {
    static final LibBpfLog INSTANCE = new LibBpfLog();
    private static final System.Logger LOG = System.getLogger("dev.loupe.bpf.libbpf");
    private static final int CAPACITY = 512;
    private static final int KEEP_PER_CALL = 40;

    private record Line(long thread, String text) {}

    private final Deque<Line> recent = new ArrayDeque<>();

    private LibBpfLog() {}

    /** Installs the print hook once (from LibBpf's initialisation). */
    void install(LibBpf.Fn setPrint) {
        try {
            MethodHandle print = MethodHandles.lookup().findVirtual(LibBpfLog.class, "onPrint",
                    MethodType.methodType(int.class, int.class, MemorySegment.class, MemorySegment.class)).bindTo(this);
            MemorySegment stub = Linker.nativeLinker().upcallStub(print,
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), Arena.global());
            setPrint.raw(stub);
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not install libbpf print callback: " + e);
        }
    }

    /** libbpf_print_fn_t. Must never throw: an exception escaping an upcall kills the JVM. */
    private int onPrint(int level, MemorySegment format, MemorySegment vaList) {
        try {
            if (level > 1) { // LIBBPF_DEBUG: too chatty to keep
                return 0;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buf = arena.allocate(2048);
                int n = (int) LibC.VSNPRINTF.invokeExact(buf, 2048L, format, vaList);
                String text = n < 0 ? "" : buf.getString(0).stripTrailing();
                synchronized (this) {
                    if (recent.size() == CAPACITY) {
                        recent.removeFirst();
                    }
                    recent.addLast(new Line(Thread.currentThread().threadId(), text));
                }
                LOG.log(level == 0 ? System.Logger.Level.DEBUG : System.Logger.Level.TRACE, text);
            }
        } catch (Throwable t) {
            // swallow: see method comment
        }
        return 0;
    }

    /** What libbpf printed on this thread since the last drain, at most the last 40 lines, joined. */
    String drainThisThread() {
        long me = Thread.currentThread().threadId();
        List<String> mine = new ArrayList<>();
        synchronized (this) {
            recent.removeIf(l -> {
                if (l.thread() == me) {
                    mine.add(l.text());
                    return true;
                }
                return false;
            });
        }
        List<String> tail = mine.size() > KEEP_PER_CALL ? mine.subList(mine.size() - KEEP_PER_CALL, mine.size()) : mine;
        return String.join("\n  ", tail);
    }
}
