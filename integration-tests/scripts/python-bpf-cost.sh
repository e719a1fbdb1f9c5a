#!/bin/bash
# run.sh WHAT: a 40-deep target (python3.11 or native), the agent on it for 30 s at 99 Hz, sample_cpu's BPF run time
# and runs over those 30 s (kernel.bpf_stats_enabled=1), and the target's samples in the profile.
set -e
export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64 PATH=/usr/lib/jvm/temurin-25-jdk-amd64/bin:$PATH
cd "$(dirname "$0")"  # deep.py = python-deep.py, deep = gcc -O1 native-deep.c
if [ "$1" = python ]; then /usr/bin/python3.11 deep.py 40 & elif [ "$1" = idle ]; then sleep 1000 & else ./deep 40 & fi
T=$!
sleep 1
rm -rf out-$1
java @/work/wt-python/agent/src/main/jvm/run.jvmopts -jar /work/wt-python/agent/target/loupe-agent.jar run --pid $T --frequency 99 --duration 40s --output out-$1 --http off --jvm-symbols off > agent-$1.log 2>&1 &
A=$!
sleep 8   # past registration
# the newest sample_cpu program: this agent's (others' agents may run theirs)
id=$(bpftool prog show -j | python3 -c "
import json,sys
print(max(p['id'] for p in json.load(sys.stdin) if p.get('name')=='sample_cpu'))")
s1=$(bpftool prog show id $id -j); sleep 30; s2=$(bpftool prog show id $id -j)
wait $A || true
kill $T
python3 -c "
import json
a=json.loads('''$s1'''); b=json.loads('''$s2''')
dt=b['run_time_ns']-a['run_time_ns']; dc=b['run_cnt']-a['run_cnt']
print('$1', 'runs', dc, 'run_time_ns', dt, 'ns/run %.0f' % (dt/dc))"
