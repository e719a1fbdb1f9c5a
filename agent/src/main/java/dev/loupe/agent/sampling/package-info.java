/**
 * CPU sampling: the poll loop ({@link dev.loupe.agent.sampling.Agent}) over a
 * {@link dev.loupe.agent.sampling.SampleSource} (the BPF sampler behind {@code KernelSampleSource}), the
 * {@link dev.loupe.agent.sampling.SampleProcessor} that symbolizes each sample once, the per-interval
 * {@link dev.loupe.agent.sampling.ProfileWindow}, monotonic {@link dev.loupe.agent.sampling.Clocks}, and
 * the side profiles other parts add to each interval, and {@link dev.loupe.agent.sampling.SampleObserver}s told of each
 * sampled process (the JVM attach fallback is one). Names no runtime. May import {@code sink}, {@code unwind},
 * {@code labels} (a sample's cgroup labels), {@code logging} and the leaves; never the root, {@code http}, {@code ship},
 * {@code jvm}, {@code latency} or {@code relay}.
 */
package dev.loupe.agent.sampling;
