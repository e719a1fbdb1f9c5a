/**
 * Where finished intervals go: the {@link dev.loupe.agent.sink.ProfileSink} contract, the
 * {@link dev.loupe.agent.sink.ProfileBatch} of {@link dev.loupe.agent.sink.EncodedProfile}s each sink is
 * given, the bounded {@link dev.loupe.agent.sink.SinkRunner} (a queue and thread per sink, every drop
 * counted) and the {@link dev.loupe.agent.sink.LocalFileSink}. May import {@code pprof} and
 * {@code logging}; off-host sinks live in {@code ship}, which depends on this package.
 */
package dev.loupe.agent.sink;
