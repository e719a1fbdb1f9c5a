/**
 * The Kafka sender: one record per series, idempotent and optionally transactional
 * ({@link dev.loupe.agent.ship.kafka.KafkaSender}). May import {@code ship} (the {@code BatchSender}
 * contract) and the leaves; {@code ship} never imports it (the root builds the Kafka sink).
 */
package dev.loupe.agent.ship.kafka;
