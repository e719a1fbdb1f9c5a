package dev.loupe.bpf;

/** A libbpf or perf_event_open failure: the call, errno (name and text) and libbpf's own messages. */
public final class BpfException extends Exception {
    private final int errno;

    BpfException(String message, int errno) {
        super(message);
        this.errno = errno;
    }

    /** The errno of the failing call, 0 if none applies. */
    public int errno() {
        return errno;
    }
}
