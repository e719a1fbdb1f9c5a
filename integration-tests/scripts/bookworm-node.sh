#!/usr/bin/env bash
# Node 18 (Debian 12's nodejs, V8 10.2) for the node stack tests (issue 29), in a minimal Debian 12 root file system
# run under chroot (in-sid.sh works for any such root): a node of another V8 layout than the host's, in a process
# whose root is not the agent's. Cached: a second run reuses DIR.
#   bookworm-node.sh DIR   (then DIR/usr/bin/node)
set -euo pipefail
dir="$1"
[ -f "$dir/.complete" ] && exit 0
"$(dirname "$0")/debian-root.sh" bookworm "$dir" nodejs
"$(dirname "$0")/in-sid.sh" "$dir" /usr/bin/node --version >&2
