package dev.loupe.agent;

import dev.loupe.bpf.RawSample;
import dev.loupe.pprof.Label;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.Symbolizer;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Symbolizes each raw sample once, while its process is most likely still alive, and adds it to every
 * open profile window. Runs on the sampling thread.
 */
final class SampleProcessor implements Consumer<RawSample> {
    private final Symbolizer symbolizer;
    private final List<ProfileWindow> windows = new CopyOnWriteArrayList<>();
    private final List<Frame> frames = new ArrayList<>(256);
    private final AtomicLong processed = new AtomicLong();
    private final AtomicLong empty = new AtomicLong();

    SampleProcessor(Symbolizer symbolizer) {
        this.symbolizer = symbolizer;
    }

    void open(ProfileWindow w) {
        windows.add(w);
    }

    void close(ProfileWindow w) {
        windows.remove(w);
    }

    @Override
    public void accept(RawSample s) {
        frames.clear();
        symbolizer.symbolizeKernel(s.kernelStack(), s.kernelStack().length, frames);
        symbolizer.symbolizeUser(s.pid(), s.processStartNs(), s.userStack(), s.userStack().length, frames);
        if (frames.isEmpty()) {
            empty.incrementAndGet();
            return;
        }
        List<Label> labels = List.of(Label.num("pid", s.pid()), Label.num("tid", s.tid()),
                Label.str("comm", s.comm()), Label.str("thread_comm", s.threadComm()));
        for (ProfileWindow w : windows) {
            w.add(frames, labels);
        }
        processed.incrementAndGet();
    }

    long processed() {
        return processed.get();
    }

    long emptyStacks() {
        return empty.get();
    }
}
