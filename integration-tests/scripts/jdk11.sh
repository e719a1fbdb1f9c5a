#!/usr/bin/env bash
# JDK 11 for the Java stack tests (issue 17 names 11 among the JVMs to profile). Debian 12 no longer has it, so
# Debian 11's own packages are fetched with a private apt configuration (the host's sources and package database
# are not touched) and unpacked, not installed, into DIR. Cached: a second run reuses DIR. The mirror is the host's.
#   jdk11.sh DIR     (the JDK is then DIR/usr/lib/jvm/java-11-openjdk-amd64)
set -euo pipefail
dir="$1"
[ -f "$dir/.complete" ] && exit 0
mirror=$("$(dirname "$0")/debian-mirror.sh")
apt="$dir.apt"
rm -rf "$apt" "$dir.partial"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$dir.partial"
echo "deb $mirror bullseye main" > "$apt/sources.list"
opts=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=/dev/null -o Dir::State::Lists="$apt/lists"
      -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root -o Debug::NoLocking=1)
apt-get "${opts[@]}" -qq update >&2
(cd "$apt/debs" && apt-get "${opts[@]}" -qq download openjdk-11-jre-headless openjdk-11-jdk-headless >&2)
for deb in "$apt"/debs/*.deb; do dpkg-deb -x "$deb" "$dir.partial"; done
# The JDK links its configuration from /etc/java-11-openjdk, which the package would have installed: point the
# links at the copy unpacked beside it instead (their final place, after the rename below).
find "$dir.partial" -type l -lname '/etc/java-11-openjdk/*' | while read -r link; do
  ln -sfn "$dir$(readlink "$link")" "$link"
done
rm -rf "$dir" "$apt"
mv "$dir.partial" "$dir"
"$dir/usr/lib/jvm/java-11-openjdk-amd64/bin/java" -version >&2
touch "$dir/.complete"
