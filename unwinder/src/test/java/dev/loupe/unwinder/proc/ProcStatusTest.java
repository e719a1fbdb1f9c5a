package dev.loupe.unwinder.proc;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcStatusTest {
    private static final int SIGQUIT = 3;

    /** Lines of a JDK 25 JVM's status, default flags (recorded on this machine's kernel). */
    private static String status(String sigCgt, String nsPid) {
        return "Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t11158\nNgid:\t0\nPid:\t11158\nPPid:\t1\n"
                + "TracerPid:\t0\nUid:\t1000\t1001\t1002\t1003\nGid:\t2000\t2001\t2002\t2003\nFDSize:\t256\n"
                + (nsPid == null ? "" : "NStgid:\t" + nsPid + "\nNSpid:\t" + nsPid + "\nNSpgid:\t1\t0\n")
                + "SigQ:\t1/96365\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n"
                + "SigIgn:\t0000000000000002\nSigCgt:\t" + sigCgt + "\nCapInh:\t0000000000000000\n";
    }

    @Test
    void aJvmWithDefaultFlagsCatchesSigquit() {
        ProcStatus s = ProcStatus.parse(status("0000000101005ccd", "11158"));
        assertTrue(s.catches(SIGQUIT));
        assertTrue(s.catches(1)); // SIGHUP: bit 0
        assertTrue(s.catches(15)); // SIGTERM: bit 14 (0x4000)
        assertFalse(s.catches(2)); // SIGINT: bit 1, ignored here, not caught
    }

    @Test
    void aJvmWithXrsDoesNotCatchSigquit() {
        // The same JDK with -Xrs: bit 2 (signal 3) clear, the rest as before.
        ProcStatus s = ProcStatus.parse(status("0000000101001cc8", "11180"));
        assertFalse(s.catches(SIGQUIT));
        assertEquals(0x101001cc8L, s.sigCgt());
    }

    @Test
    void signalNIsBitNMinusOne() {
        for (int sig = 1; sig <= 64; sig++) {
            ProcStatus only = ProcStatus.parse(status(Long.toHexString(1L << (sig - 1)), "1"));
            for (int other = 1; other <= 64; other++) {
                assertEquals(other == sig, only.catches(other), sig + " vs " + other);
            }
        }
        ProcStatus all = ProcStatus.parse(status("ffffffffffffffff", "1"));
        assertTrue(all.catches(64));
        assertThrows(IllegalArgumentException.class, () -> all.catches(0));
        assertThrows(IllegalArgumentException.class, () -> all.catches(65));
    }

    @Test
    void masksAreSixteenHexDigits() {
        assertEquals(4L, ProcStatus.parseMask("0000000000000004"));
        assertEquals(-1L, ProcStatus.parseMask("ffffffffffffffff"));
        assertThrows(IllegalArgumentException.class, () -> ProcStatus.parseMask(""));
        assertThrows(IllegalArgumentException.class, () -> ProcStatus.parseMask("10000000000000000"));
        assertThrows(NumberFormatException.class, () -> ProcStatus.parseMask("000000000000000g"));
    }

    @Test
    void effectiveIdsAreTheSecondFields() {
        ProcStatus s = ProcStatus.parse(status("0", "11158"));
        assertEquals(1001, s.euid());
        assertEquals(2001, s.egid());
        assertArrayEquals(new int[] {1000, 1001, 1002, 1003}, s.uids());
        assertArrayEquals(new int[] {2000, 2001, 2002, 2003}, s.gids());
    }

    @Test
    void theNamespacePidIsTheLastNspidField() {
        assertEquals(7, ProcStatus.parse(status("0", "4321\t7")).nsPid(4321));
        assertEquals(4321, ProcStatus.parse(status("0", "4321")).nsPid(4321));
        assertEquals(4321, ProcStatus.parse(status("0", null)).nsPid(4321)); // kernels before 4.1
    }

    @Test
    void nsPidsListEveryNamespaceFromTheReadersDown() {
        assertArrayEquals(new int[] {8951, 1}, ProcStatus.parse(status("0", "8951\t1")).nsPids(), "not NStgid or NSpgid");
        assertArrayEquals(new int[] {8638}, ProcStatus.parse("Name:\tbash\nNSpid:\t8638\nNSpgid:\t8638\n").nsPids());
        assertArrayEquals(new int[] {40123, 517, 1}, ProcStatus.parse("Pid:\t40123\nNSpid:\t40123\t517\t1").nsPids());
        assertArrayEquals(new int[0], ProcStatus.parse("Name:\told-kernel\nPid:\t5\n").nsPids());
    }

    @Test
    void absentLinesAreEmptyAndTheirValuesRefused() {
        ProcStatus s = ProcStatus.parse("Name:\tx\nUid:\t0\t0\t0\t0\n");
        assertEquals(0, s.euid());
        assertEquals(0, s.gids().length);
        assertEquals("status has no Gid line", assertThrows(IllegalStateException.class, s::egid).getMessage());
        assertEquals("status has no SigCgt line", assertThrows(IllegalStateException.class, () -> s.catches(SIGQUIT)).getMessage());
        assertEquals(0, ProcStatus.parse("").uids().length);
    }

    @Test
    void aLineThatIsNotNumbersIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> ProcStatus.parse("Name:\tx\nNSpid:\t12\tbad\n"));
        assertThrows(IllegalArgumentException.class, () -> ProcStatus.parse("Uid:\t-1\t0\t0\t0\n"));
        // A name is any bytes, colons included: only the four keys are read.
        assertArrayEquals(new int[] {5}, ProcStatus.parse("Name:\tUid: x\nNSpid:\t5\n").nsPids());
    }

    /** Our own status: the uid the JVM reports, and the first NSpid is the pid this /proc names us by. */
    @Test
    void readsARealStatus() throws Exception {
        ProcStatus self = ProcStatus.read(Path.of("/proc/self"));
        assertEquals(ProcessHandle.current().pid(), self.nsPids()[0]);
        // /proc/self belongs to the effective uid and gid: the same numbers, read another way.
        assertEquals(Files.getAttribute(Path.of("/proc/self/"), "unix:uid"), self.euid());
        assertEquals(Files.getAttribute(Path.of("/proc/self/"), "unix:gid"), self.egid());
        assertTrue(self.catches(3), "HotSpot catches SIGQUIT (thread dumps) unless run with -Xrs");
    }
}
