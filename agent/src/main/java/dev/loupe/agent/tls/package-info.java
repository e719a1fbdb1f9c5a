/**
 * PEM files for TLS, decoded once for both ends: the Parca client's CAs and client certificate ({@code ship})
 * and the HTTP endpoint's server certificate ({@code http}). Imports nothing of the agent.
 */
package dev.loupe.agent.tls;
