package dev.loupe.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Debian 12 with a real systemd, booted with {@code systemd-nspawn --boot} from a copy of a cached
 * debootstrap (integration-tests/scripts/bookworm-rootfs.sh: minbase plus systemd), BPF and perf_event allowed, no
 * network. Commands run inside through {@code nsenter} into its init's namespaces.
 */
public final class NspawnMachine implements AutoCloseable {
    /** The cached root; its name says what it holds (another package list, another directory: bookworm-rootfs.sh). */
    static final Path ROOTFS_CACHE = Path.of(System.getProperty("loupe.rootfs.cache", "/var/cache/loupe/bookworm-minbase-systemd"));
    /** Where {@link #boot} puts the package in the machine. */
    public static final String PACKAGE = "/root/loupe.deb";

    private final Path root;
    private final Process nspawn;
    private final long init;
    private final Path console;

    private NspawnMachine(Path root, Process nspawn, long init, Path console) {
        this.root = root;
        this.nspawn = nspawn;
        this.init = init;
        this.console = console;
    }

    /**
     * Copies the cached root file system (made first if missing) under {@code work}, puts {@code deb} at {@link #PACKAGE}
     * and boots it. The machine has no network, so what {@code apt-get install PACKAGE} needs besides the root is
     * fetched first, as a host's apt would fetch it, into the copy's apt cache (downloaded, not installed): the .debs
     * of the package's Depends that the root lacks, and {@code alsoFetched} (packages a test installs later).
     */
    public static NspawnMachine boot(Path repo, Path work, String name, Path deb, String... alsoFetched) throws Exception {
        Commands.run(List.of(repo.resolve("integration-tests/scripts/bookworm-rootfs.sh").toString(),
                ROOTFS_CACHE.toString()), 1800).check();
        Path root = work.resolve("rootfs");
        Commands.run(List.of("cp", "-a", "--reflink=auto", ROOTFS_CACHE.toString(), root.toString()), 600).check();
        Files.copy(deb, root.resolve(PACKAGE.substring(1)));
        // Fresh lists (the cached root's may name versions the mirror has dropped since), then the downloads.
        Commands.run(List.of("chroot", root.toString(), "apt-get", "-q", "update"), 600).check();
        List<String> fetch = new ArrayList<>(List.of("chroot", root.toString(), "apt-get", "-q", "-y", "--download-only",
                "install", PACKAGE));
        fetch.addAll(List.of(alsoFetched));
        Commands.run(fetch, 600).check();
        Path console = work.resolve("console.log");
        Process p = new ProcessBuilder("systemd-nspawn", "-D", root.toString(), "--boot", "--machine=" + name,
                "--capability=all", "--system-call-filter=bpf perf_event_open", "--bind-ro=/sys/kernel/btf",
                "--register=no", "--keep-unit", "--console=pipe", "--private-network")
                .redirectErrorStream(true).redirectOutput(console.toFile()).start();
        long init = -1;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (init < 0 && System.nanoTime() < deadline && p.isAlive()) {
            init = p.children().filter(c -> c.info().command().map(cmd -> cmd.contains("systemd")).orElse(false))
                    .mapToLong(ProcessHandle::pid).findFirst().orElse(-1);
            if (init < 0) {
                Thread.sleep(100);
            }
        }
        if (init < 0) {
            p.destroyForcibly();
            throw new IllegalStateException("systemd-nspawn did not start the container's systemd:\n" + Files.readString(console));
        }
        NspawnMachine m = new NspawnMachine(root, p, init, console);
        // "degraded" is fine (a minimal system has units that fail in a container); "running" or "degraded" is up.
        // Until systemd has opened its socket, systemctl cannot connect ("Failed to connect to bus", or "offline"
        // when it reaches no manager yet; seen on a loaded machine): ask again.
        Commands.Result r = m.run(120, "systemctl", "is-system-running", "--wait");
        while ((r.output().contains("Failed to connect to bus") || r.output().strip().equals("offline"))
                && System.nanoTime() < deadline + TimeUnit.SECONDS.toNanos(60)) {
            Thread.sleep(200);
            r = m.run(120, "systemctl", "is-system-running", "--wait");
        }
        if (!r.output().contains("running") && !r.output().contains("degraded")) {
            m.close();
            throw new IllegalStateException("the container did not finish booting: " + r.output());
        }
        return m;
    }

    /** The container's root as seen from the host (to place and read files). */
    public Path root() {
        return root;
    }

    public Commands.Result run(int timeoutSeconds, String... cmd) throws IOException, InterruptedException {
        List<String> full = new ArrayList<>(List.of("nsenter", "-t", Long.toString(init), "-a", "--"));
        full.addAll(List.of(cmd));
        return Commands.run(full, timeoutSeconds);
    }

    public Commands.Result check(int timeoutSeconds, String... cmd) throws IOException, InterruptedException {
        Commands.Result r = run(timeoutSeconds, cmd);
        if (r.exit() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed (" + r.exit() + "):\n" + r.output()
                    + "\n-- journal --\n" + run(30, "journalctl", "-b", "--no-pager", "-n", "80").output());
        }
        return r;
    }

    /** One property of a unit, e.g. {@code MainPID}. */
    public String property(String unit, String name) throws IOException, InterruptedException {
        return check(30, "systemctl", "show", "-p", name, "--value", unit).output().trim();
    }

    public String journal(String unit) throws IOException, InterruptedException {
        return run(30, "journalctl", "-b", "--no-pager", "-o", "cat", "-u", unit).output();
    }

    /** Waits until {@code condition} holds, polling; fails with {@code what} and the unit's journal. */
    public void await(String what, Duration timeout, Check condition) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.holds()) {
                return;
            }
            Thread.sleep(250);
        }
        throw new AssertionError("timed out after " + timeout.toSeconds() + " s waiting for " + what
                + "\n-- journal of loupe.service --\n" + journal("loupe.service"));
    }

    @FunctionalInterface
    public interface Check {
        boolean holds() throws Exception;
    }

    @Override
    public void close() throws Exception {
        if (nspawn.isAlive()) {
            run(30, "systemctl", "poweroff", "--no-block");
            if (!nspawn.waitFor(60, TimeUnit.SECONDS)) {
                nspawn.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        Commands.run(List.of("rm", "-rf", root.toString()), 300);
    }

    String console() throws IOException {
        return Files.readString(console);
    }
}
