package dev.loupe.bpf;

import java.util.Optional;

/**
 * Why a recorded thread left the CPU (loupe_abi.h's enum off_cpu_state, from sched_switch's prev_state and preempt),
 * with the name the off-CPU profile's {@code state} label gives it.
 */
public enum OffCpuState {
    /** Preempted or yielded while runnable: its wait is run-queue time. */
    RUNNABLE(1, "runnable"),
    /** TASK_INTERRUPTIBLE: sleep, poll, futex, socket. */
    SLEEPING(2, "sleeping"),
    /** TASK_UNINTERRUPTIBLE (D): disk I/O, some kernel locks. */
    BLOCKED(3, "blocked"),
    /** Any other state: stopped, traced. */
    STOPPED(4, "stopped");

    private final int code;
    private final String label;

    OffCpuState(int code, String label) {
        this.code = code;
        this.label = label;
    }

    public int code() {
        return code;
    }

    public String label() {
        return label;
    }

    public static Optional<OffCpuState> ofCode(int code) {
        for (OffCpuState s : values()) {
            if (s.code == code) {
                return Optional.of(s);
            }
        }
        return Optional.empty();
    }
}
