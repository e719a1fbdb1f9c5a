#!/usr/bin/env bash
# Prints the host's Debian mirror (deb822 sources or sources.list), so the scripts that fetch Debian packages work
# wherever apt does. Fails, saying so, if there is none.
set -euo pipefail
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=$(sed -n 's/^deb \(\[[^]]*\] \)\?\([^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -1)
[ -n "$mirror" ] || { echo "no Debian mirror in /etc/apt/sources.list(.d)" >&2; exit 1; }
echo "$mirror"
