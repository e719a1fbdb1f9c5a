/**
 * Fleet labels read from the host about a process: its systemd unit (system and user manager) and its
 * container id, parsed from {@code /proc/PID/cgroup} ({@link dev.loupe.agent.labels.CgroupLabels}), and
 * a small cache of them per process identity ({@link dev.loupe.agent.labels.CgroupLabelCache}). Imports
 * nothing of the agent.
 */
package dev.loupe.agent.labels;
