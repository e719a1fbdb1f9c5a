package dev.loupe.it.bench;

import dev.loupe.it.Commands;
import dev.loupe.it.NspawnMachine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code ./loupe bench service [SECONDS]}: the package as a fleet host runs it, against {@code ./loupe run} on
 * the same host. Builds the .deb (size), installs it into a booted Debian 12 (systemd-nspawn; install time
 * includes the AOT training run and the first start), restarts the service three times (start to READY), then
 * runs the host's agent the way {@code ./loupe run} does beside the service for SECONDS (default 60) at 19 Hz:
 * both sample the same CPUs and processes. CPU time comes from each process's /proc/PID/stat ticks, memory
 * from VmRSS/VmHWM, so the two are measured alike.
 */
public final class ServiceBench {
    private ServiceBench() {}

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 && !args[0].isBlank() ? Integer.parseInt(args[0].trim()) : 60;
        Path repo = Path.of(System.getProperty("loupe.repo", "..")).toAbsolutePath().normalize();
        Path work = Files.createTempDirectory("loupe-service-bench");

        Commands.Result built = Commands.run(List.of("env", "JAVA_HOME=" + System.getProperty("java.home"),
                repo.resolve("systemd/build-package.sh").toString(), repo.toString()), 900).check();
        String[] lines = built.output().strip().split("\n");
        Path deb = Path.of(lines[lines.length - 1]);
        String installedKb = Commands.run(List.of("dpkg-deb", "-f", deb.toString(), "Installed-Size"), 30).check().output().strip();
        System.out.printf(Locale.ROOT, "package: %s, %.1f MB (installed %.1f MB)%n", deb.getFileName(),
                Files.size(deb) / 1e6, Long.parseLong(installedKb) * 1024 / 1e6);

        try (NspawnMachine m = NspawnMachine.boot(repo, work, "loupe-bench-" + ProcessHandle.current().pid(), deb)) {
            long t0 = System.nanoTime();
            m.check(600, "apt-get", "install", "-y", NspawnMachine.PACKAGE);
            m.await("loupe.service active", Duration.ofSeconds(120), () -> m.property("loupe.service", "ActiveState").equals("active"));
            System.out.printf(Locale.ROOT, "install to active (AOT training run and first start included): %.1f s%n",
                    (System.nanoTime() - t0) / 1e9);

            List<Double> ready = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                m.check(120, "systemctl", "restart", "loupe");
                long start = Long.parseLong(m.property("loupe.service", "ExecMainStartTimestampMonotonic"));
                long active = Long.parseLong(m.property("loupe.service", "ActiveEnterTimestampMonotonic"));
                ready.add((active - start) / 1e6);
            }
            System.out.printf(Locale.ROOT, "service start to READY (3 restarts): %s s%n",
                    ready.stream().map(r -> String.format(Locale.ROOT, "%.2f", r)).toList());

            Path log = work.resolve("host-agent.log");
            Process host = BenchAgent.start(BenchAgent.jar(), log, List.of("--frequency", "19", "--output",
                    work.resolve("host-profiles").toString(), "--http", "off"));
            try {
                String servicePid = m.property("loupe.service", "MainPID");
                Thread.sleep(30_000); // both past start-up (table builds for every process on CPU, the JIT)
                long serviceCpu0 = serviceCpuNanos(m, servicePid);
                long hostCpu0 = CpuMeter.sinceStartNanos(host.pid());
                Thread.sleep(seconds * 1000L);
                long serviceCpu = serviceCpuNanos(m, servicePid) - serviceCpu0;
                long hostCpu = CpuMeter.sinceStartNanos(host.pid()) - hostCpu0;
                String status = m.check(30, "cat", "/proc/" + servicePid + "/status").output();
                long serviceRss = kb(status, "VmRSS:");
                long serviceHwm = kb(status, "VmHWM:");
                long hostRss = BenchAgent.statusKb(host.pid(), "VmRSS:");
                long hostHwm = BenchAgent.statusKb(host.pid(), "VmHWM:");
                System.out.printf(Locale.ROOT, "side by side, 19 Hz, %d s:%n", seconds);
                System.out.printf(Locale.ROOT, "  CPU            service %d ms (%.3f %% of a core)  loupe run %d ms (%.3f %%)  ratio %.2f%n",
                        serviceCpu / 1_000_000, 100.0 * serviceCpu / (seconds * 1e9), hostCpu / 1_000_000,
                        100.0 * hostCpu / (seconds * 1e9), (double) serviceCpu / hostCpu);
                System.out.printf(Locale.ROOT, "  RSS now / peak service %d / %d MB  loupe run %d / %d MB  ratio %.2f / %.2f%n",
                        serviceRss / 1024, serviceHwm / 1024, hostRss / 1024, hostHwm / 1024,
                        (double) serviceRss / hostRss, (double) serviceHwm / hostHwm);
                System.out.println("  service limits: " + m.check(30, "systemctl", "show", "-p", "MemoryHigh", "-p", "MemoryMax",
                        "-p", "CPUQuotaPerSecUSec", "loupe").output().strip().replace('\n', ' '));
            } finally {
                BenchAgent.stop(host);
            }
        } finally {
            Commands.run(List.of("rm", "-rf", work.toString()), 300);
        }
    }

    /** utime + stime of a process of the machine, from its /proc/PID/stat (USER_HZ 100). */
    private static long serviceCpuNanos(NspawnMachine m, String pid) throws Exception {
        String stat = m.check(30, "cat", "/proc/" + pid + "/stat").output();
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L; // fields 14 and 15
    }

    private static long kb(String status, String field) {
        for (String line : status.split("\n")) {
            if (line.startsWith(field)) {
                return Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0]);
            }
        }
        throw new IllegalStateException(field + " missing in\n" + status);
    }
}
