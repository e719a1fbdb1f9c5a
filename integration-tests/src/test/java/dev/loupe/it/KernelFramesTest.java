package dev.loupe.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A syscall-heavy target shows kernel function names above (leaf-side of) its user frames. */
class KernelFramesTest {
    @TempDir
    Path dir;

    @Test
    void readLoopShowsKernelReadPathUnderUserCode() throws Exception {
        Path bin = Targets.build("syscalls.c", dir, "syscalls", "-fno-omit-frame-pointer");
        Path out = AgentProcess.profileTarget(dir, bin, "5s").out();
        List<Profiles.Stack> stacks = Profiles.stacksOfDir(out);
        long total = Profiles.total(stacks);
        long inKernelRead = 0;
        for (Profiles.Stack s : stacks) {
            int vfsRead = s.functions().indexOf("vfs_read");
            int syscall = s.functions().indexOf("do_syscall_64");
            int firstUser = firstUserFrame(s);
            if (vfsRead >= 0 && syscall > vfsRead && firstUser > syscall) {
                inKernelRead += s.count();
            }
        }
        // read(2) of 1 MiB from /dev/zero is almost all kernel time (clearing user memory).
        assertTrue(inKernelRead > 0.5 * total, "vfs_read above do_syscall_64 above user frames in "
                + inKernelRead + " of " + total + "; e.g. " + stacks.get(0));
    }

    private static int firstUserFrame(Profiles.Stack s) {
        for (int i = 0; i < s.files().size(); i++) {
            if (!s.files().get(i).equals("[kernel.kallsyms]")) {
                return i;
            }
        }
        return -1;
    }
}
