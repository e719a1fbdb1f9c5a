#!/usr/bin/env bash
# Go 1.15 (Debian 11's golang-1.15) for the pre-1.18 pclntab line tests (issue 28): a minimal Debian 11 root file
# system run under chroot (in-sid.sh works for any such root) whose own `go tool addr2line` is the ground truth.
# Debian 11 has no Go 1.16 or 1.17, and its backports are no longer on deb.debian.org (archive.debian.org is not
# reachable here), so the 1.16-1.17 layout is checked by hand-laid tables (GoOldLineTableTest).
# Cached: a second run reuses DIR.
#   bullseye-go.sh DIR   (then DIR/usr/lib/go-1.15/bin/go)
set -euo pipefail
dir="$1"
[ -f "$dir/.complete" ] && exit 0
"$(dirname "$0")/debian-root.sh" bullseye "$dir" golang-1.15-go,ca-certificates
"$(dirname "$0")/in-sid.sh" "$dir" /usr/lib/go-1.15/bin/go version >&2
