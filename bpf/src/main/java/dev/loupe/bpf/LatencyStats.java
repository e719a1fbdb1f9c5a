package dev.loupe.bpf;

/**
 * Counters of the latency probes since {@link LatencyProbes} was opened (all probes together).
 *
 * @param entries          calls entered (an entry that ran twice for one call counts once)
 * @param exits            calls measured into a histogram
 * @param threadMigrations calls that returned on a different thread than they entered
 * @param reentries        Go entries run again for one call (stack growth or preemption in the prologue), collapsed
 * @param staleReplaced    native entries that found an older call at the same thread and SP (its exit was missed)
 * @param unmatchedExits   exits with no entry (attached mid-call, entry not recorded or aged out)
 * @param inFlightFull     calls not measured because the in-flight map was full
 * @param gReadErrors      Go hits whose g or goid could not be read
 * @param unconfigured     hits whose cookie named no active probe
 * @param groupsFull       measured calls in no group (the groups map was full): in the histograms, not in
 *                         {@link LatencyProbes#drainGroups()}
 * @param stacksFull       calls whose caller stack was not stored (the stacks map was full)
 * @param agedOut          in-flight calls removed by {@link LatencyProbes#ageOut} (goroutines that never returned)
 */
public record LatencyStats(long entries, long exits, long threadMigrations, long reentries, long staleReplaced,
                           long unmatchedExits, long inFlightFull, long gReadErrors, long unconfigured, long groupsFull,
                           long stacksFull, long agedOut) {}
