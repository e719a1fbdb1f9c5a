#!/usr/bin/env bash
# A minimal Debian root file system of SUITE with PACKAGES (comma-separated), debootstrapped from the host's own
# mirror. Cached: a second run with DIR complete does nothing.
#   debian-root.sh SUITE DIR PACKAGES
set -euo pipefail
suite="$1"
dir="$2"
packages="$3"
[ -f "$dir/.complete" ] && exit 0
mirror=$("$(dirname "$0")/debian-mirror.sh")
command -v debootstrap >/dev/null || { echo "debian-root: debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }
rm -rf "$dir.partial"
mkdir -p "$(dirname "$dir")"
debootstrap --variant=minbase --include="$packages" "$suite" "$dir.partial" "$mirror" >&2
echo "deb $mirror $suite main" > "$dir.partial/etc/apt/sources.list"
rm -rf "$dir"
mv "$dir.partial" "$dir"
touch "$dir/.complete"
