package dev.loupe.bpf;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A consumer of a BPF_MAP_TYPE_RINGBUF map. Records are handed to the {@link Handler} on the thread that
 * calls {@link #poll} or {@link #consume}; a handler that throws loses that record, which is counted in
 * {@link #handlerFailures()} (an exception may not escape the native callback).
 */
public final class RingBuffer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RingBuffer.class.getName());
    private static final int EINTR = 4;

    /** Receives one record; {@code data} is valid only during the call. */
    @FunctionalInterface
    public interface Handler {
        void onRecord(MemorySegment data);
    }

    private final Arena arena = Arena.ofShared();
    private final String name;
    private final Handler handler;
    private final MemorySegment ringBuffer;
    private final AtomicLong failures = new AtomicLong();
    private volatile boolean failureLogged;
    private boolean closed;

    private RingBuffer(BpfMap map, Handler handler) throws BpfException {
        this.name = map.name();
        this.handler = handler;
        MethodHandle target;
        try {
            target = MethodHandles.lookup().findVirtual(RingBuffer.class, "onRecord",
                    MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class, long.class)).bindTo(this);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        MemorySegment callback = Linker.nativeLinker().upcallStub(target, LibBpf.RING_BUFFER_SAMPLE_FN, arena);
        try {
            ringBuffer = LibBpf.RING_BUFFER_NEW.pointer(name, map.fdForRingBuffer(), callback, MemorySegment.NULL, MemorySegment.NULL);
        } catch (BpfException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    public static RingBuffer open(BpfMap map, Handler handler) throws BpfException {
        return new RingBuffer(map, handler);
    }

    /** ring_buffer_sample_fn. Must never throw. */
    private int onRecord(MemorySegment ctx, MemorySegment data, long size) {
        try {
            handler.onRecord(data.reinterpret(size));
        } catch (Throwable t) {
            failures.incrementAndGet();
            if (!failureLogged) {
                failureLogged = true;
                LOG.log(System.Logger.Level.ERROR, "ring buffer " + name + ": record handler failed (record lost; logged once)", t);
            }
        }
        return 0;
    }

    /** Waits up to {@code timeout} for records and consumes those that woke it; returns how many. EINTR counts as 0. */
    public int poll(Duration timeout) throws BpfException {
        return result(LibBpf.RING_BUFFER_POLL, LibBpf.ringBufferPoll(ringBuffer(),
                (int) Math.min(Integer.MAX_VALUE, timeout.toMillis())));
    }

    /** Consumes every record available now, without waiting; returns how many. */
    public int consume() throws BpfException {
        return result(LibBpf.RING_BUFFER_CONSUME, LibBpf.ringBufferConsume(ringBuffer()));
    }

    /** Records lost because the handler threw. */
    public long handlerFailures() {
        return failures.get();
    }

    private synchronized MemorySegment ringBuffer() {
        if (closed) {
            throw new IllegalStateException("ring buffer " + name + " is closed");
        }
        return ringBuffer;
    }

    private int result(LibBpf.Fn fn, int rc) throws BpfException {
        if (rc == -EINTR) {
            return 0;
        }
        if (rc < 0) {
            throw fn.failure(name, -rc);
        }
        return rc;
    }

    /** Frees the consumer; call it from the polling thread or after polling stopped. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        LibBpf.RING_BUFFER_FREE.raw(ringBuffer);
        arena.close();
    }
}
