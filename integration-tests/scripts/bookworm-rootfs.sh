#!/usr/bin/env bash
# A minimal Debian 12 for booting under systemd-nspawn in the service tests: debootstrap's minbase plus systemd, as
# a minimal host has it, and nothing else, so that the package's own Depends are what its install brings (the tests
# fetch them into a copy's apt cache: NspawnMachine) and a tool the package uses without declaring it is missing
# here as on such a host (procps' /bin/kill was: systemctl reload failed). Cached: a second run reuses DIR; the
# callers' DIR names these contents (NspawnMachine's /var/cache/loupe/bookworm-minbase-systemd), so a root with other
# contents gets another directory. The mirror is the host's own, so it works wherever apt does.
#   bookworm-rootfs.sh DIR
set -euo pipefail
# systemd: the init systemd-nspawn --boot starts (/lib/systemd/systemd; no systemd-sysv needed). The harness needs
# nothing more: it drives the machine with systemctl, journalctl and systemd-analyze (systemd; as root they use
# systemd's private socket, no D-Bus), apt-get and dpkg (minbase), and sh, cat, id, mkdir, mv (minbase).
exec "$(dirname "$0")/debian-root.sh" bookworm "$1" systemd
