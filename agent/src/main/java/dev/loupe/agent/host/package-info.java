/**
 * Facts about the host as the agent sees it: whether the agent runs in the initial PID namespace (the
 * one whose pids the kernel's BPF programs report), and translating pids between a process's own
 * namespace and this {@code /proc}'s ({@link dev.loupe.agent.host.PidNamespaces}). Imports nothing of
 * the agent.
 */
package dev.loupe.agent.host;
