/**
 * HotSpot JVMs among the sampled processes, made to write their JIT symbols ({@code /tmp/perf-<pid>.map}) without
 * any JVM flag: {@link dev.loupe.agent.jvm.JvmInspector} tells a HotSpot JVM from other processes (its
 * {@code libjvm.so} mapping, the {@code release} file beside it) and whether it may be attached to;
 * {@link dev.loupe.agent.jvm.HotSpotAttacher} speaks HotSpot's attach protocol to run {@code Compiler.perfmap};
 * {@link dev.loupe.agent.jvm.JvmSymbols} is a {@code sampling.SampleObserver} the sampling thread calls (cheap per
 * sample) and runs the rest on one background thread of its own. The package's only FFM code is {@code Sigquit} (the
 * signal that starts a JVM's attach listener). Imports {@code sampling} (the observer interface; {@code sampling}
 * does not import it) and the leaves (a process's credentials, caught signals and pid in its own namespace come from
 * the unwinder's {@code ProcStatus}); nothing else of the agent.
 */
package dev.loupe.agent.jvm;
