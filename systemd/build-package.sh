#!/usr/bin/env bash
# Builds dist/loupe_<version>_amd64.deb and a .tar.gz of the same tree from a built checkout (./loupe package
# builds first). The package holds a jlink'ed Java runtime (only the modules the agent uses), the agent's jars,
# its JVM option files, /usr/bin/loupe, the unit, a commented /etc/loupe/loupe.yaml and the docs. Its Depends
# are the shared libraries the runtime links (found by dpkg-shlibdeps) plus libbpf1 (loaded through FFM) and
# adduser (postinst): never a JDK, Maven or a compiler.
#   build-package.sh ROOT
set -euo pipefail
root=$(cd "$1" && pwd)
: "${JAVA_HOME:?JAVA_HOME must name a JDK >= 25 (with jlink)}"
agent="$root/agent/target"
[ -f "$agent/loupe-agent.jar" ] || { echo "build-package: $agent/loupe-agent.jar missing: build first" >&2; exit 1; }
version=$(sed -n '0,/<artifactId>loupe-parent<\/artifactId>/d; s/.*<version>\(.*\)<\/version>.*/\1/p' "$root/pom.xml" | head -1)
[ -n "$version" ] || { echo "build-package: no version in pom.xml" >&2; exit 1; }
deb_version="${version/-SNAPSHOT/~snapshot}"
name="loupe_${deb_version}_amd64"
dist="$root/dist"
stage="$dist/stage/$name"
rm -rf "$stage" "$dist/$name.deb" "$dist/$name.tar.gz"
mkdir -p "$stage/DEBIAN"
lib="$stage/usr/lib/loupe"
mkdir -p "$lib/lib"

# The runtime: the modules jdeps finds in the agent and its libraries, less two that nothing runs: java.desktop
# (SnakeYAML's JavaBeans support; Loupe only composes node trees) and java.compiler (error_prone's annotations).
# Without java.desktop the runtime needs no X11 or ALSA libraries.
modules=$("$JAVA_HOME/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release 25 -R \
  --class-path "$agent/lib/*" "$agent/loupe-agent.jar" | tr ',' '\n' | grep -vx -e java.desktop -e java.compiler -e java.sql | paste -sd,)
"$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-debug \
  --no-man-pages --no-header-files --compress=zip-6 --generate-cds-archive --output "$lib/runtime"
# The class-data archive for heaps over 32 GB (no compressed oops) never serves the agent's heap (160 MB at most).
rm -f "$lib/runtime/lib/server/classes_nocoops.jsa"

cp "$agent/loupe-agent.jar" "$lib/"
cp "$agent"/lib/*.jar "$lib/lib/"
cp "$root/agent/src/main/jvm/run.jvmopts" "$root/agent/src/main/jvm/relay.jvmopts" \
  "$root/agent/src/main/jvm/latency-diff.jvmopts" "$lib/"
# libbpf 1.1 bundled: Ubuntu 22.04 has only libbpf0 (0.5), which lacks functions the agent binds. It needs
# GLIBC_2.28 and ELFUTILS_1.6 at most, which every supported host has (libelf1, zlib1g, libc6 below).
libbpf_so=$(readlink -f /usr/lib/x86_64-linux-gnu/libbpf.so.1)
install -D -m 0644 "$libbpf_so" "$lib/native/libbpf.so.1"
install -D -m 0755 "$root/systemd/loupe-launcher.sh" "$stage/usr/bin/loupe"
install -D -m 0644 "$root/systemd/loupe.service" "$stage/lib/systemd/system/loupe.service"

# /etc/loupe/loupe.yaml: the service's settings, then every default commented out (from the option table).
mkdir -p "$stage/etc/loupe"
{
  echo "# Loupe's configuration for the loupe service. systemctl reload loupe applies what can change live;"
  echo "# the log line then names what needs systemctl restart loupe. Every option: /usr/share/doc/loupe/configuration.md"
  echo "output: /var/lib/loupe/profiles"
  echo
  echo "# The defaults (keys below are commented out; uncomment one to change it). The service's own settings stand"
  echo "# uncommented in their place: http.socket (a key given twice is an error, so each appears once)."
  # http: the block stays open with the service's socket in it, so its other keys can be uncommented in place.
  awk '
    /^http:/ { print; print "  socket: /run/loupe/loupe.sock   # profiles for root and group loupe only (/usr/share/doc/loupe/service.md)"; inhttp = 1; next }
    inhttp && /^  socket:/ { next }
    inhttp && !/^  / { inhttp = 0 }
    { print "#" $0 }
  ' "$root/config/src/main/resources/dev/loupe/config/default.yaml"
} > "$stage/etc/loupe/loupe.yaml"
chmod 0644 "$stage/etc/loupe/loupe.yaml"

# Prometheus rules (alerts on latency regressions, recording rules) for the fleet's Prometheus.
install -D -m 0644 "$root/config/alerting/loupe-rules.yml" "$stage/usr/share/loupe/prometheus/loupe-rules.yml"

doc="$stage/usr/share/doc/loupe"
mkdir -p "$doc"
cp "$root/README.md" "$doc/"
for f in "$root"/docs/*.md; do  # every page README.md links to
  cp "$f" "$doc/"
done
cat > "$doc/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: loupe
Comment: Loupe and the libraries in /usr/lib/loupe/lib keep their own licenses (see each jar's META-INF);
 the Java runtime in /usr/lib/loupe/runtime is OpenJDK (GPL-2.0 with the Classpath Exception), its legal
 notices in /usr/lib/loupe/runtime/legal.
COPYRIGHT

# Depends: the shared libraries the runtime's ELF files need, as Debian names them.
shlib_tmp=$(mktemp -d)
mkdir -p "$shlib_tmp/debian"
printf 'Source: loupe\n\nPackage: loupe\nArchitecture: amd64\n' > "$shlib_tmp/debian/control"
mapfile -t elves < <(find "$lib/runtime" "$lib/native" -type f \( -name '*.so' -o -name '*.so.1' -o -path '*/bin/*' \) -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
shlibs=$(cd "$shlib_tmp" && dpkg-shlibdeps -O --ignore-missing-info -l"$lib/runtime/lib" -l"$lib/runtime/lib/server" "${elves[@]}" 2>/dev/null \
  | sed -n 's/^shlibs:Depends=//p')
rm -rf "$shlib_tmp"
depends="${shlibs:+$shlibs, }adduser"

installed_kb=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: loupe
Version: $deb_version
Architecture: amd64
Maintainer: Loupe developers <loupe@localhost>
Section: admin
Priority: optional
Installed-Size: $installed_kb
Depends: $depends
Description: always-on eBPF continuous CPU profiler
 Loupe samples every CPU with a BPF perf_event program, walks kernel and user
 stacks (unwind tables for code without frame pointers), measures function
 latency with uprobes and writes pprof profiles, locally or to Parca and Kafka.
 It runs as the loupe service with a handful of capabilities; it bundles its
 own Java runtime.
CONTROL
echo /etc/loupe/loupe.yaml > "$stage/DEBIAN/conffiles"
install -m 0755 "$root/systemd/debian/postinst" "$root/systemd/debian/prerm" "$root/systemd/debian/postrm" "$stage/DEBIAN/"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum > DEBIAN/md5sums)

dpkg-deb --root-owner-group -Zxz --build "$stage" "$dist/$name.deb" >/dev/null
tar --owner=0 --group=0 --exclude=./DEBIAN -C "$stage" -czf "$dist/$name.tar.gz" .
rm -rf "$dist/stage"
echo "$dist/$name.deb"
