#!/usr/bin/env bash
# CPython 3.9 for the Python stack tests (issue 26): Debian 11's python3.9 (libpython linked in) and libpython3.9,
# with its headers (the layout's facts), in a minimal Debian 11 root file system run under chroot (in-sid.sh works for
# any such root). Cached: a second run reuses DIR.
#   bullseye-python.sh DIR   (then DIR/usr/bin/python3.9)
set -euo pipefail
dir="$1"
[ -f "$dir/.complete" ] && exit 0
"$(dirname "$0")/debian-root.sh" bullseye "$dir" python3.9,libpython3.9,libpython3.9-dev
"$(dirname "$0")/in-sid.sh" "$dir" /usr/bin/python3.9 -VV >&2
