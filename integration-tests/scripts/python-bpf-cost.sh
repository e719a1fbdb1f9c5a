#!/bin/bash
# Issue 26's BPF cost figure: python-bpf-cost.sh native|python|idle. A 40-deep target (python3.11 python-deep.py, or
# native-deep.c built with gcc -O1, or sleep for idle), the packaged agent on it alone for 40 s at 99 Hz, and
# sample_cpu's BPF run time and runs over 30 s of it (kernel.bpf_stats_enabled=1). Needs root and a built agent.
# sample_cpu is taken as the newest such program: this agent's, unless another agent starts meanwhile.
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64} PATH=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin:$PATH
work=$(mktemp -d)
sysctl -qw kernel.bpf_stats_enabled=1
case "$1" in
  python) /usr/bin/python3.11 "$here/python-deep.py" 40 & ;;
  idle) sleep 1000 & ;;
  *) gcc -O1 -o "$work/deep" "$here/native-deep.c" && "$work/deep" 40 & ;;
esac
T=$!
trap 'kill $T 2>/dev/null || true' EXIT
sleep 1
java @"$root/agent/src/main/jvm/run.jvmopts" -jar "$root/agent/target/loupe-agent.jar" run --pid $T --frequency 99 \
  --duration 40s --output "$work/out" --http off --jvm-symbols off > "$work/agent.log" 2>&1 &
A=$!
sleep 8 # past registration
id=$(bpftool prog show -j | python3 -c "import json,sys; print(max(p['id'] for p in json.load(sys.stdin) if p.get('name')=='sample_cpu'))")
s1=$(bpftool prog show id "$id" -j); sleep 30; s2=$(bpftool prog show id "$id" -j)
wait $A || true
python3 -c "
import json
a=json.loads('''$s1'''); b=json.loads('''$s2''')
dt=b['run_time_ns']-a['run_time_ns']; dc=b['run_cnt']-a['run_cnt']
print('$1', 'runs', dc, 'run_time_ns', dt, 'ns/run %.0f' % (dt/dc), 'profiles in $work/out')"
