package dev.loupe.it;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A server binary run by a test (Prometheus, Alertmanager): its process, its log and its own directory, all gone
 * after {@link #close()}; readiness from its {@code /-/ready}.
 */
final class ServerProcess implements AutoCloseable {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final String name;
    private final Path dir;
    private final Process process;
    private final String baseUrl;

    private ServerProcess(String name, Path dir, Process process, String baseUrl) {
        this.name = name;
        this.dir = dir;
        this.process = process;
        this.baseUrl = baseUrl;
    }

    /** Fails, never skips, when a server the tests need is not installed. */
    static void requireInstalled(Path binary, String debianPackage) {
        if (!Files.isExecutable(binary)) {
            throw new IllegalStateException(binary + " is not installed: apt-get install " + debianPackage
                    + " (./loupe test installs it)");
        }
    }

    /** Starts {@code command} with its output in {@code dir}/log and waits until {@code baseUrl}/-/ready answers 200. */
    static ServerProcess start(String name, Path dir, List<String> command, String baseUrl, Duration timeout)
            throws IOException, InterruptedException {
        Path log = dir.resolve("log");
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        ServerProcess server = new ServerProcess(name, dir, p, baseUrl);
        try {
            server.awaitReady(timeout);
        } catch (RuntimeException | InterruptedException e) {
            server.close();
            throw e;
        }
        return server;
    }

    private void awaitReady(Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < end) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited with " + process.exitValue() + ":\n" + log());
            }
            try {
                if (HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl + "/-/ready")).timeout(Duration.ofSeconds(5)).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (ConnectException e) {
                // not listening yet
            } catch (IOException e) {
                // starting
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException(name + " not ready at " + baseUrl + " within " + timeout + ":\n" + log());
    }

    /** GET {@code baseUrl + pathAndQuery}; fails unless it answers 200. */
    String get(String pathAndQuery) throws IOException, InterruptedException {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl + pathAndQuery))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException(name + " answered " + r.statusCode() + " to " + pathAndQuery + ": " + r.body());
        }
        return r.body();
    }

    String log() {
        try {
            return Files.readString(dir.resolve("log"));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /** SIGTERM (SIGKILL after 10 s), then its directory is deleted. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
        try {
            Directories.delete(dir);
        } catch (IOException e) {
            System.err.println("could not remove " + dir + ": " + e.getMessage());
        }
    }
}
