/**
 * Logging helpers every part of the agent may use: one-line log format (journal-friendly) and a
 * rate-limited logger. Imports nothing of the agent.
 */
package dev.loupe.agent.logging;
