/**
 * Shipping profiles off the host without losing them.
 *
 * <ul>
 *   <li>{@link dev.loupe.agent.ship.Spool}: per sink, a directory of batches the sink has not confirmed.
 *       A producer calls {@code append(attributes, payload)} once per batch; the bytes are on disk before
 *       it returns. For Parca (and as the Kafka record value) the payload is one serialized
 *       {@code WriteRawRequest}; attributes carry what a sink needs besides (e.g. a Kafka key).</li>
 *   <li>{@link dev.loupe.agent.ship.QuarantineStore}: a capped, fsynced folder of what a remote end refused for
 *       good, each beside its reason; the spool's {@code quarantine/} and {@code loupe relay}'s quarantine.</li>
 *   <li>{@link dev.loupe.agent.ship.DeliveryLoop}: one thread per sink drains the spool, oldest first,
 *       through a {@link dev.loupe.agent.ship.BatchSender}; retries with capped full-jitter backoff,
 *       quarantines rejected batches, and {@code drainOnce(deadline)} makes the last attempt at SIGTERM.</li>
 *   <li>{@link dev.loupe.agent.ship.ParcaClient}: Parca's WriteRaw as unary gRPC over OkHttp HTTP/2;
 *       {@code (batch, timeout) -> client.writeRaw(batch.payload(), timeout)} is its BatchSender.</li>
 * </ul>
 * <p>{@link dev.loupe.agent.ship.WriteRawEncoder} gives each process its series (cgroup labels lifted from its
 * samples) and applies the user's relabel rules. May import {@code sink} (the contract it implements),
 * {@code labels} (the cgroup label names), {@code relabel}, {@code files} (durable writes), {@code tls} (PEM files) and the leaves; never
 * the root or {@code ship.kafka}.
 */
package dev.loupe.agent.ship;
