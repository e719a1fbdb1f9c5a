/**
 * The agent's composition root: {@code Main} ({@code loupe run}; {@code loupe relay} handed to
 * {@link dev.loupe.agent.relay}, {@code loupe latency-diff} to {@link dev.loupe.agent.latencydiff}) and the
 * wiring that builds each part from the configuration ({@code Sinks}: every sink, closed again on a failed start, and the relabel rules' check), and the
 * service's life under systemd ({@code ServiceSupervisor}: readiness, status, watchdog; {@code ConfigReloader}:
 * SIGHUP). Nothing else lives here; every other package of the agent may be imported from here, and none
 * imports this one.
 */
package dev.loupe.agent;
