package dev.loupe.agent.regression;

/**
 * One frame of a latency profile's stack, as the baseline profiles merge it: by function name, source file,
 * line and mapping file, not by address (processes of one binary load it at different addresses). An
 * unsymbolized frame (no function) keeps its address, the only thing that tells it apart.
 *
 * @param mappingFile the mapped file, "" when the location has no mapping
 * @param function    the function's name, null when unsymbolized
 * @param file        the function's source file, "" when unknown
 * @param address     0 unless unsymbolized
 */
record StackFrame(String mappingFile, String function, String file, long line, long address) {}
