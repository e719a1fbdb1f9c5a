package dev.loupe.unwinder.symbolize;

/** The mapping a frame's address falls in, as pprof's Mapping wants it. */
public record MappingRef(long start, long limit, long fileOffset, String path, String buildId, boolean hasFunctions) {}
