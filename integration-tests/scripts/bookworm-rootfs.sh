#!/usr/bin/env bash
# A minimal Debian 12 with systemd, for booting under systemd-nspawn in the service tests. Cached: a second run
# reuses DIR. The mirror is the host's own, so it works wherever apt does.
#   bookworm-rootfs.sh DIR
set -euo pipefail
# The package's Depends are included so installing it needs no network inside the container.
exec "$(dirname "$0")/debian-root.sh" bookworm "$1" systemd,systemd-sysv,dbus,libbpf1,zlib1g,adduser,procps
