package dev.loupe.agent.http;

import java.util.Optional;

/** Who gets profiles ({@code /debug/pprof/*}) on one listener; {@code /metrics} and {@code /healthz} are everyone's. */
sealed interface ProfileAccess {
    /** Empty: served; otherwise why not. {@code authorization}: the request's header, null when it has none. */
    Optional<Refusals.Reason> check(String authorization);

    /** Every request (the Unix socket, whose file mode decides who connects; or http.profiles: unauthenticated). */
    record Open() implements ProfileAccess {
        @Override
        public Optional<Refusals.Reason> check(String authorization) {
            return Optional.empty();
        }
    }

    /** No request (http.profiles: off on TCP). */
    record Off() implements ProfileAccess {
        @Override
        public Optional<Refusals.Reason> check(String authorization) {
            return Optional.of(Refusals.Reason.PROFILES_OFF);
        }
    }

    /** Requests with the bearer token (http.profiles: on). */
    record Token(BearerToken token) implements ProfileAccess {
        @Override
        public Optional<Refusals.Reason> check(String authorization) {
            return switch (token.check(authorization)) {
                case ACCEPTED -> Optional.empty();
                case NO_TOKEN -> Optional.of(Refusals.Reason.NO_TOKEN);
                case WRONG_TOKEN -> Optional.of(Refusals.Reason.WRONG_TOKEN);
            };
        }
    }
}
