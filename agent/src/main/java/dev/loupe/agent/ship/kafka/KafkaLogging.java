package dev.loupe.agent.ship.kafka;

import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The Kafka client logs through slf4j into java.util.logging; at INFO it prints its whole configuration
 * and every reconnect. Only warnings and errors are kept unless the user configured these loggers.
 */
public final class KafkaLogging {
    // Strong references: java.util.logging keeps loggers weakly, and a collected logger loses its level.
    private static final Logger CLIENT = Logger.getLogger("org.apache.kafka");
    private static final Logger SERVER = Logger.getLogger("kafka");

    private KafkaLogging() {}

    public static void quiet() {
        synchronized (KafkaLogging.class) {
            if (CLIENT.getLevel() == null) {
                CLIENT.setLevel(Level.WARNING);
            }
            if (SERVER.getLevel() == null) {
                SERVER.setLevel(Level.WARNING);
            }
        }
    }
}
