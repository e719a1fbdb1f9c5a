package dev.loupe.unwinder.symbolize;

/**
 * One symbolized frame. {@code address} is the runtime address looked up (return addresses already
 * moved back into the call instruction). {@code mapping} is null when no mapping is known and
 * {@code function} is null when no symbol covers the address: such frames are kept, never dropped.
 */
public record Frame(long address, MappingRef mapping, String function, boolean kernel) {}
