package dev.loupe.agent;

import dev.loupe.config.CommandLine;
import dev.loupe.config.LoupeConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The one factory of sinks: a sink that cannot open closes those already opened (their threads end). */
class SinksTest {
    @TempDir
    Path dir;

    private static List<String> threadsNamed(String prefix) {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.startsWith(prefix)).toList();
    }

    @Test
    void aSinkThatCannotOpenClosesTheOnesOpenedBeforeIt() throws Exception {
        // Files and Kafka open (the Kafka producer needs no broker to start); Parca's TLS CA file does not exist.
        Path config = dir.resolve("loupe.yaml");
        Files.writeString(config, """
                remote-store:
                  address: 127.0.0.1:1
                  ca-file: %s
                """.formatted(dir.resolve("no-such-ca.pem")));
        LoupeConfig c = CommandLine.parse(new String[] {"--config", config.toString(), "--output", dir.resolve("out").toString(),
                "--kafka-bootstrap-servers", "127.0.0.1:1", "--state-dir", dir.resolve("state").toString()}).config();
        assertEquals(List.of(), threadsNamed("loupe-deliver-"), "no delivery thread before");

        Sinks.StartFailure e = assertThrows(Sinks.StartFailure.class, () -> Sinks.open(c));
        assertTrue(e.getMessage().startsWith("remote store 127.0.0.1:1: "), e.getMessage());
        assertTrue(e.getMessage().contains("no-such-ca.pem"), e.getMessage());
        // The Kafka sink was opened first (its delivery thread and the producer's network thread started), then closed.
        assertEquals(List.of(), threadsNamed("loupe-deliver-"), "the Kafka sink's delivery thread ended");
        assertEquals(List.of(), threadsNamed("kafka-producer-network-thread"), "the Kafka producer was closed");
    }

    @Test
    void theSameConfigurationWithoutTheBrokenSinkOpensBoth() throws Exception {
        LoupeConfig c = CommandLine.parse(new String[] {"--output", dir.resolve("out").toString(),
                "--kafka-bootstrap-servers", "127.0.0.1:1", "--state-dir", dir.resolve("state").toString()}).config();
        List<dev.loupe.agent.sink.ProfileSink> sinks = Sinks.open(c);
        try {
            assertEquals(2, sinks.size());
            assertEquals(1, threadsNamed("loupe-deliver-").size(), "the Kafka sink's delivery thread: " + threadsNamed("loupe-"));
        } finally {
            Sinks.closeAll(sinks);
        }
        assertEquals(List.of(), threadsNamed("loupe-deliver-"));
    }
}
