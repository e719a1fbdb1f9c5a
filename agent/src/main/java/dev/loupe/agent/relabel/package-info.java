/**
 * Prometheus {@code relabel_config} semantics over a label set: {@link dev.loupe.agent.relabel.Relabeling}
 * parses a rule list from a generic structure (what a YAML loader gives) and applies it in order;
 * {@code GoRegex} reads Prometheus' RE2 regular expressions with {@code java.util.regex} and expands
 * replacement templates as Go does. Imports nothing of the agent.
 */
package dev.loupe.agent.relabel;
