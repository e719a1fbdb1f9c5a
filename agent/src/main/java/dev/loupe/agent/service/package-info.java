/**
 * Running under systemd: the {@code sd_notify} protocol ({@link dev.loupe.agent.service.SdNotify}:
 * readiness, status, watchdog, reload, stop; the only FFM code of the package lives in its
 * {@code UnixDatagram}), the watchdog policy that decides whether the agent is healthy enough to ping
 * ({@link dev.loupe.agent.service.WatchdogGate}) and the one-line status a person reads in
 * {@code systemctl status} ({@link dev.loupe.agent.service.StatusLine}). Imports nothing of the agent:
 * the wiring hands it plain facts (counters, sink names).
 */
package dev.loupe.agent.service;
