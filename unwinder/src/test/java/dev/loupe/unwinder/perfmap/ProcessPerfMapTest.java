package dev.loupe.unwinder.perfmap;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ProcessPerfMapTest {
    @Test
    void statusGivesTheOwnNamespacePidAndTheUids() {
        String nested = "Name:\tnode\nUid:\t1000\t1001\t1000\t1001\nNSpid:\t4242\t300\t7\n";
        assertEquals(7, ProcessPerfMap.nsPid(nested, 4242), "the innermost namespace's pid");
        assertEquals(4242, ProcessPerfMap.nsPid("Name:\tnode\nNSpid:\t4242\n", 4242));
        assertEquals(4242, ProcessPerfMap.nsPid("Name:\told kernel\nPid:\t4242\n", 4242), "no NSpid line: the pid");
        assertEquals(List.of(1000, 1001, 1000, 1001), java.util.Arrays.stream(ProcessPerfMap.uids(nested)).boxed().toList());
        assertEquals(0, ProcessPerfMap.uids("Name:\tx\n").length);
    }
}
