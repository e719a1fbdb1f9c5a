/**
 * Files that survive a crash ({@link dev.loupe.agent.files.DurableFiles}: temp file, fsync, rename), shared by
 * the parts that keep state on disk ({@code ship}'s spool and quarantine, {@code regression}'s baselines).
 * Imports nothing of the agent.
 */
package dev.loupe.agent.files;
