package dev.loupe.bpf;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The real process_exit program (sched_process_exit) in the kernel: a process's exit comes once, after the samples
 * of its life (a sample of the rest of do_exit may follow), with its exact start time, when its last thread leaves
 * (not when a thread does); its unwind entry is gone from the kernel by then. Never skipped: CI runs as root with BPF.
 */
class ProcessExitTest {
    private final List<Process> children = new ArrayList<>();

    @AfterEach
    void killChildren() {
        children.forEach(Process::destroyForcibly);
    }

    /** One record as the poll delivered it: a sample (exit false) or an exit, in delivery order. */
    private record Event(boolean exit, int pid, long startNs, int kernelFrames, int userFrames) {
        Event(boolean exit, int pid, long startNs) {
            this(exit, pid, startNs, 0, 0);
        }

        static Event of(RawSample r) {
            return new Event(false, r.pid(), r.processStartNs(), r.kernelStack().length, r.userStack().length);
        }
    }

    private static long startTicks(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        return Long.parseLong(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[19]);
    }

    /** Polls until {@code until} holds of what was delivered, or fails after 10 s. */
    private static List<Event> pollUntil(PerfEventSampler s, java.util.function.Predicate<List<Event>> until, String what)
            throws Exception {
        List<Event> events = new ArrayList<>();
        long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!until.test(events)) {
            if (System.nanoTime() > end) {
                fail("not within 10 s: " + what + "; delivered " + events.size() + " records; " + s.stats());
            }
            s.poll(Duration.ofMillis(50), r -> events.add(Event.of(r)),
                    (pid, start) -> events.add(new Event(true, pid, start)));
        }
        return events;
    }

    @Test
    void aProcessExitComesOnceAfterItsSamplesWithItsStartAndItsUnwindEntryIsGone() throws Exception {
        PerfEventSamplerTest.availableOrFail();
        // Busy for a few seconds (longer than the sampler takes to open), then it exits by itself.
        Process p = new ProcessBuilder("/bin/sh", "-c", "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done")
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        children.add(p);
        int pid = (int) p.pid();
        long start = startTicks(pid);
        try (PerfEventSampler s = PerfEventSampler.open(99, Set.of(pid))) {
            // An entry as Java writes one at registration (an empty slice: walked with nothing, which is fine here).
            s.unwindMaps().setProcess(pid, start, 0, 0);
            List<Event> events = pollUntil(s, ev -> ev.stream().anyMatch(Event::exit), "the exit of pid " + pid);
            assertTrue(p.waitFor(5, java.util.concurrent.TimeUnit.SECONDS), "the target ended");
            s.poll(Duration.ofMillis(200), r -> events.add(Event.of(r)),
                    (x, y) -> events.add(new Event(true, x, y)));
            List<Event> exits = events.stream().filter(Event::exit).toList();
            assertEquals(List.of(new Event(true, pid, exits.get(0).startNs())), exits, "one exit, of the filtered pid only");
            assertEquals(start, exits.get(0).startNs() / 10_000_000L, "the exit names the process start /proc/PID/stat gives");
            int exitAt = events.indexOf(exits.get(0));
            assertTrue(exitAt > 0, "the target was sampled before it exited");
            assertTrue(events.stream().allMatch(e -> e.pid() == pid && e.startNs() == exits.get(0).startNs()), events.toString());
            // The task still runs the rest of do_exit after the tracepoint (files, signals, the last schedule), its memory
            // already gone: a sample there comes after the record, with kernel frames and at most the saved user pc.
            for (Event late : events.subList(exitAt + 1, events.size())) {
                assertTrue(late.kernelFrames() > 0 && late.userFrames() <= 1, "a late sample is in the exit path: " + late);
            }
            assertFalse(s.unwindMaps().removeProcess(pid), "the kernel removed its unwind entry at the exit");
            SamplerStats st = s.stats();
            assertEquals(1, st.processExits(), st.toString());
            assertEquals(0, st.exitDrops(), st.toString());
            assertEquals(events.size() - 1, st.delivered(), "exits are not counted as samples");
        }
    }

    /** Threads that end while their process runs are not exits: one record comes, when the last thread leaves. */
    @Test
    void threadsEndingAreNotProcessExitsTheLastThreadIs() throws Exception {
        PerfEventSamplerTest.availableOrFail();
        // Five threads end while the process lives on for 3 s (longer than the sampler takes to open); then one more
        // spins 0.3 s and the process ends.
        Process p = new ProcessBuilder("/usr/bin/python3", "-c", String.join("\n",
                "import threading, time",
                "ts = [threading.Thread(target=lambda: None) for _ in range(5)]",
                "[t.start() for t in ts]; [t.join() for t in ts]",
                "print('threads done', flush=True)",
                "time.sleep(3.0)",
                "def spin():",
                "    end = time.time() + 0.3",
                "    while time.time() < end: pass",
                "threading.Thread(target=spin).start()"))
                .redirectErrorStream(true).start();
        children.add(p);
        int pid = (int) p.pid();
        long start = startTicks(pid);
        try (PerfEventSampler s = PerfEventSampler.open(99, Set.of(pid))) {
            assertEquals("threads done\n", new String(p.getInputStream().readNBytes("threads done\n".length())));
            List<Event> all = new ArrayList<>();
            all.addAll(pollUntil(s, ev -> !p.isAlive(), "the target's end"));
            all.addAll(pollUntil(s, ev -> ev.stream().anyMatch(Event::exit) || all.stream().anyMatch(Event::exit),
                    "the exit record"));
            List<Event> exits = all.stream().filter(Event::exit).toList();
            assertEquals(1, exits.size(), "one exit for seven threads ending: " + exits);
            assertEquals(pid, exits.get(0).pid());
            assertEquals(start, exits.get(0).startNs() / 10_000_000L);
            assertEquals(1, s.stats().processExits());
        }
    }
}
