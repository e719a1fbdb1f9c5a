package dev.loupe.unwinder.proc;

import java.io.IOException;

/**
 * A read of a process's memory hit end of file: the process has no address space any more (it exited). An unmapped
 * address is a plain {@link IOException}, so a caller can tell "this pointer is stale" from "this process is gone".
 */
public final class ProcessGoneException extends IOException {
    public ProcessGoneException(String message) {
        super(message);
    }
}
