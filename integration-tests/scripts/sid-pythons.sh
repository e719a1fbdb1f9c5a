#!/usr/bin/env bash
# CPython 3.13 and 3.14 for the Python stack tests (issue 26): Debian unstable's, as python3.X (libpython linked in)
# and as libpython3.X.so (embedders' form), with their headers (the layouts' facts) and gcc to build a small embedder
# against each. They need a newer glibc than Debian 12's, so they run in a minimal Debian unstable root file system
# under chroot (in-sid.sh): the test interpreters are then processes whose root is not the agent's, as in a
# container. Cached: a second run reuses DIR.
#   sid-pythons.sh DIR   (then DIR/usr/bin/python3.13 and python3.14)
set -euo pipefail
dir="$1"
[ -f "$dir/.pythons-complete" ] && exit 0
"$(dirname "$0")/debian-root.sh" sid "$dir" python3.13,python3.14,libpython3.13,libpython3.14
cp /etc/resolv.conf "$dir/etc/resolv.conf"
"$(dirname "$0")/in-sid.sh" "$dir" apt-get -o Acquire::Check-Valid-Until=false update -qq >&2
"$(dirname "$0")/in-sid.sh" "$dir" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false install -y -qq --no-install-recommends \
  libpython3.13-dev libpython3.14-dev gcc libc6-dev >&2
for v in 3.13 3.14; do "$(dirname "$0")/in-sid.sh" "$dir" "/usr/bin/python$v" -VV >&2; done
touch "$dir/.pythons-complete"
