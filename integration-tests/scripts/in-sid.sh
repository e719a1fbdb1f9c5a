#!/usr/bin/env bash
# Runs a program of the Debian unstable root file system of sid-jdks.sh, chrooted into it, with the host's /proc and
# /dev bound in a private mount namespace (gone with the process; the JVM needs /proc, e.g. to find its own libjli).
# The program is exec'd: its pid is this script's. Arguments pass through as they are, never through a shell's parsing.
#   in-sid.sh DIR PROGRAM [ARGS...]     (PROGRAM: a path inside DIR)
set -euo pipefail
dir="$1"
shift
exec unshare -m sh -c 'mount --bind /proc "$0/proc" && mount --bind /dev "$0/dev" && exec chroot "$0" "$@"' "$dir" "$@"
