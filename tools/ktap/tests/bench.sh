#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Compile time of the largest sample (and the stripped tool's size):
# `make bench` in tools/ktap. Prints microseconds per compilation,
# averaged over N runs of `ktap -b` (process start included).
KTAP=${1:-./ktap}
N=${N:-200}
cd "$(dirname "$0")/.." || exit 1
KTAP_TRACEFS=$(pwd)/tests/tracefs
KTAP_KALLSYMS=/dev/null
export KTAP_TRACEFS KTAP_KALLSYMS
big=$(ls -S samples/*.kp | head -1)
start=$(date +%s%N)
i=0
while [ $i -lt "$N" ]; do
	"$KTAP" -b "$big" > /dev/null || exit 1
	i=$((i + 1))
done
end=$(date +%s%N)
start0=$(date +%s%N)
i=0
while [ $i -lt "$N" ]; do
	/bin/true
	i=$((i + 1))
done
end0=$(date +%s%N)
per=$(( (end - start) / N / 1000 ))
base=$(( (end0 - start0) / N / 1000 ))
strip -o /tmp/ktap.bench.$$ "$KTAP" && size=$(wc -c < /tmp/ktap.bench.$$) && rm -f /tmp/ktap.bench.$$
echo "ktap -b $big ($(wc -c < "$big") bytes): ${per} us per process run (/bin/true: ${base} us; noisy on a busy host)"
echo "ktap stripped: $size bytes"
