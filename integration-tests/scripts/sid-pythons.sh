#!/usr/bin/env bash
# CPython 3.13 and 3.14 for the Python stack tests (issue 26): Debian unstable's, as python3.X (libpython linked in)
# and as libpython3.X.so (embedders' form), with gcc to build a small embedder against each. They need a newer glibc
# than Debian 12's, so they run in a minimal Debian unstable root file system under chroot (in-sid.sh): the test
# interpreters are then processes whose root is not the agent's, as in a container. Cached: a second run reuses DIR.
#   sid-pythons.sh DIR   (then DIR/usr/bin/python3.13 and python3.14)
set -euo pipefail
dir="$1"
[ -f "$dir/.complete" ] && exit 0
"$(dirname "$0")/debian-root.sh" sid "$dir" python3.13,python3.14,libpython3.13,libpython3.14
for v in 3.13 3.14; do "$(dirname "$0")/in-sid.sh" "$dir" "/usr/bin/python$v" -VV >&2; done
