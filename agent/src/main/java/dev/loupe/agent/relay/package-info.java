/**
 * {@code loupe relay}: forwards profiles from a Kafka consumer group to Parca
 * ({@link dev.loupe.agent.relay.KafkaRelay}, its command line in {@link dev.loupe.agent.relay.RelayCommand}).
 * May import {@code ship}, {@code ship.kafka} and the leaves; nothing of the agent imports it but the root.
 */
package dev.loupe.agent.relay;
