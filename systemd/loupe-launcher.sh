#!/bin/bash
# /usr/bin/loupe as installed by the loupe package: the bundled Java runtime, the agent's jars and its JVM
# options. Nothing is built or downloaded here.
set -euo pipefail
lib=/usr/lib/loupe
java="$lib/runtime/bin/java"
jar="$lib/loupe-agent.jar"
# The bundled libbpf (hosts such as Ubuntu 22.04 have none of version 1).
libbpf=(-Dloupe.libbpf="$lib/native/libbpf.so.1")
# MALLOC_ARENA_MAX: the agent's native allocations are few (libbpf, FFM); two arenas save ~10 MB of RSS.
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
usage() {
  cat <<'USAGE'
Usage: loupe run [options]      profile every CPU (loupe run --help lists the options)
       loupe relay [options]    forward profiles from Kafka to Parca (loupe relay --help)
       loupe latency-diff [options] BASE.pb.gz CURRENT.pb.gz
                                compare two latency profiles; exit 1 if a function got slower
       loupe --version
The service: systemctl status loupe; configuration: /etc/loupe/loupe.yaml (then systemctl reload loupe).
USAGE
}
cmd="${1:-}"
case "$cmd" in
  run)
    shift
    opts=("@$lib/run.jvmopts")
    # The JVM's AOT cache made at install; the JVM ignores a cache that does not match (never fatal).
    # LOUPE_AOT=train writes the cache instead: postinst's training run goes through this script, so it starts
    # the JVM with the options the service gets (the same @argfile and the bundled libbpf).
    aot="${LOUPE_AOT_CACHE:-$lib/loupe-agent.aot}"
    case "${LOUPE_AOT:-on}" in
      off) ;;
      train) opts+=("-XX:AOTCacheOutput=$aot") ;;
      *) if [ -r "$aot" ]; then opts+=("-XX:AOTCache=$aot"); fi ;;
    esac
    exec "$java" "${opts[@]}" "${libbpf[@]}" -jar "$jar" run "$@"
    ;;
  relay)
    shift
    exec "$java" "@$lib/relay.jvmopts" -jar "$jar" relay "$@"
    ;;
  latency-diff)
    shift
    exec "$java" "@$lib/latency-diff.jvmopts" -jar "$jar" latency-diff "$@"
    ;;
  --version|version)
    exec "$java" -Xshare:auto -XX:TieredStopAtLevel=1 -jar "$jar" --version
    ;;
  -h|--help|help|"")
    usage
    ;;
  *)
    echo "loupe: unknown command '$cmd'" >&2
    usage >&2
    exit 2
    ;;
esac
