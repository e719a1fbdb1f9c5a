package dev.loupe.agent.jvm;

/**
 * A HotSpot JVM the agent may attach to.
 *
 * @param pid        its pid in the agent's {@code /proc}
 * @param startTicks its start ({@code /proc/PID/stat} field 22): the same pid later is another process
 * @param nsPid      its pid in its own PID namespace: the number in {@code .java_pid<N>} and {@code perf-<N>.map}
 * @param euid       its effective uid (the attach socket's owner; HotSpot accepts this uid or root)
 * @param egid       its effective gid
 */
record JvmTarget(int pid, long startTicks, int nsPid, int euid, int egid, JavaRuntime runtime) {
    /** How the log names it: {@code pid 4242 (java 25.0.3)}. */
    String describe() {
        return "pid " + pid + " (" + runtime.describe() + ")";
    }
}
