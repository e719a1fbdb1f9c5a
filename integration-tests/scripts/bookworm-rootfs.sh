#!/usr/bin/env bash
# A minimal Debian 12 with systemd, for booting under systemd-nspawn in the service tests. Cached: a second run
# reuses DIR. The mirror is the host's own (deb822 sources or sources.list), so it works wherever apt does.
#   bookworm-rootfs.sh DIR
set -euo pipefail
dir="$1"
[ -f "$dir/.complete" ] && exit 0
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=$(sed -n 's/^deb \(\[[^]]*\] \)\?\([^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -1)
[ -n "$mirror" ] || { echo "bookworm-rootfs: no Debian mirror in /etc/apt/sources.list(.d)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "bookworm-rootfs: debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }
rm -rf "$dir.partial"
mkdir -p "$(dirname "$dir")"
# The package's Depends are included so installing it needs no network inside the container.
debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,libbpf1,zlib1g,adduser,procps \
  bookworm "$dir.partial" "$mirror" >&2
echo "deb $mirror bookworm main" > "$dir.partial/etc/apt/sources.list"
rm -rf "$dir"
mv "$dir.partial" "$dir"
touch "$dir/.complete"
