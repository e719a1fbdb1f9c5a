#!/usr/bin/env bash
# JDK 8 and JDK 21 for the Java stack tests (issue 17 names 8u and 21 among the JVMs to profile). Debian 12 has
# neither, and the packages of the Debian that does (unstable) need a newer glibc than Debian 12's, so they run in
# a minimal Debian unstable root file system, under chroot (in-sid.sh): the test JVMs are then also processes whose
# root is not the agent's, as in a container. libc6-dbg names glibc's static thread-start functions (start_thread,
# clone3), which the tests want at the root of each stack. Cached: a second run reuses DIR. The mirror is the host's.
#   sid-jdks.sh DIR   (JDKs then in DIR/usr/lib/jvm/java-8-openjdk-amd64 and java-21-openjdk-amd64)
set -euo pipefail
dir="$1"
[ -f "$dir/.complete" ] && exit 0
"$(dirname "$0")/debian-root.sh" sid "$dir" openjdk-8-jdk-headless,openjdk-21-jdk-headless,libc6-dbg
for v in 8 21; do "$(dirname "$0")/in-sid.sh" "$dir" "/usr/lib/jvm/java-$v-openjdk-amd64/bin/java" -version >&2; done
