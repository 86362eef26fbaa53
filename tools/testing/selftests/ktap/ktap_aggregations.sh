#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Aggregations and output formats: hist(), lhist(), stats() and
# ptable() recorded with one
# `<<<` each, on every vCPU, merged when read and printed as charts. The
# helper program reads /dev/zero through descriptor 42 with sizes the
# test knows (1 once, 2 twice, 3 three times, 100 four times, 1000 five
# times) on each online CPU in turn, so every chart and statistic has an
# exact expected text. Also: -f json (every line of a run parsed by
# python3's json module, the aggregations' numbers checked) and the
# string builtins.
#
# KTAP_BIN overrides the tool (default: tools/ktap/ktap of this tree, then
# ktap in PATH).

DIR=$(cd "$(dirname "$0")" && pwd)
for h in "$DIR/../kselftest/ktap_helpers.sh" \
	 "${KTAP_CACHE:-$HOME/.cache/ktap}/linux-source-6.12/tools/testing/selftests/kselftest/ktap_helpers.sh"; do
	[ -f "$h" ] && { . "$h"; break; }
done

KTAP=${KTAP_BIN:-}
[ -z "$KTAP" ] && [ -x "$DIR/../../../ktap/ktap" ] && KTAP=$DIR/../../../ktap/ktap
[ -z "$KTAP" ] && KTAP=$(command -v ktap || true)
WORKLOAD=$DIR/ktap_workload
CONTROL=/sys/kernel/tracing/ktap/control

ktap_print_header
[ "$(id -u)" = 0 ] || { ktap_skip_all "must run as root"; exit "$KSFT_SKIP"; }
[ -e "$CONTROL" ] || { ktap_skip_all "$CONTROL missing (CONFIG_KTAP?)"; exit "$KSFT_SKIP"; }
[ -x "$KTAP" ] || { ktap_skip_all "ktap tool not built"; exit "$KSFT_SKIP"; }
[ -x "$WORKLOAD" ] || { ktap_skip_all "$WORKLOAD not built"; exit "$KSFT_SKIP"; }
ktap_set_plan 12

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# golden NAME: compare $T/NAME.out with $T/NAME.want
golden() {
	if diff -u "$T/$1.want" "$T/$1.out" > "$T/$1.diff"; then
		ktap_test_pass "$2"
	else
		sed 's/^/# /' "$T/$1.diff" | head -40
		ktap_test_fail "$2"
	fi
}

# row LABEL COUNT TOP: one chart line, the bar scaled to TOP
row() {
	local bar

	printf -v bar '%*s' $(($2 * 50 / $3)) ''
	printf '%-20s %8d |%-50s|\n' "$1" "$2" "${bar// /@}"
}

# The program's reads, one session; the tool's output without the
# helper's "cpus N" line, which gives N.
run_reads() { # SCRIPT OUT
	timeout 120 "$KTAP" -q "$1" -- "$WORKLOAD" reads 42 > "$2.raw" 2> "$2.err"
	echo "rc $?" >> "$2.err"
	n=$(sed -n 's/^cpus \([0-9]*\)$/\1/p' "$2.raw")
	grep -v '^cpus [0-9]*$' "$2.raw" > "$2"
}

log2_chart() { # N: the hist() chart of one key, N passes
	local n=$1 top=$((5 * $1))

	row '[1]' "$n" $top
	row '[2, 4)' $((5 * n)) $top
	row '[4, 8)' 0 $top
	row '[8, 16)' 0 $top
	row '[16, 32)' 0 $top
	row '[32, 64)' 0 $top
	row '[64, 128)' $((4 * n)) $top
	row '[128, 256)' 0 $top
	row '[256, 512)' 0 $top
	row '[512, 1K)' $((5 * n)) $top
}

cat > "$T/agg.kp" <<'EOF'
var h = hist()
var l = lhist(0, 100, 10)
var s = stats()
var c = hist()
trace syscalls:sys_enter_read /fd == 42/ {
	h[execname] <<< e.count
	l[execname] <<< e.count
	s[execname] <<< e.count
	c[cpu] <<< e.count
}
trace_end {
	print(h)
	print(l)
	print(s)
	print("top 1:")
	print_hist(c, 1)
	delete(c, 0)
	print("after delete(c, 0):")
	print(c)
	clear(h)
	print("after clear(h):")
	print(h)
	var k = "ktap_workload"
	printf("count %d sum %d avg %d min %d max %d\n", count(s[k]), sum(s[k]),
	       avg(s[k]), min(s[k]), max(s[k]))
}
EOF
run_reads "$T/agg.kp" "$T/all.out"
N=${n:-0}
ktap_print_msg "the helper read on $N CPUs"

# 1. hist(): log2 buckets, ranges, bars scaled to the largest, edges trimmed
{ echo 'h[ktap_workload]:'; log2_chart "$N"; echo; } > "$T/hist.want"
sed -n '/^h\[ktap_workload\]:$/,/^$/p' "$T/all.out" | head -12 > "$T/hist.out"
golden hist "hist(): h[execname] <<< count, $N CPUs merged, exact chart"

# 2. lhist(0, 100, 10): the overflow bucket takes 100 and 1000
{
	echo 'l[ktap_workload]:'
	row '[0, 10)' $((6 * N)) $((9 * N))
	for a in 10 20 30 40 50 60 70 80 90; do
		row "[$a, $((a + 10)))" 0 $((9 * N))
	done
	row '[100, ...)' $((9 * N)) $((9 * N))
	echo
} > "$T/lhist.want"
sed -n '/^l\[ktap_workload\]:$/,/^$/p' "$T/all.out" > "$T/lhist.out"
golden lhist "lhist(0, 100, 10): exact chart"

# 3. stats(): exact count, sum, avg, min, max
sum=$((5414 * N))
echo "s[ktap_workload]: count $((15 * N)), sum $sum, avg $((sum / (15 * N))), min 1, max 1000" > "$T/stats.want"
grep '^s\[' "$T/all.out" > "$T/stats.out"
golden stats "stats(): exact statistics"

# 4. the readers of a statistic agree
echo "count $((15 * N)) sum $sum avg $((sum / (15 * N))) min 1 max 1000" > "$T/readers.want"
grep '^count ' "$T/all.out" > "$T/readers.out"
golden readers "count(), sum(), avg(), min(), max() of s[k]"

# 5. one chart per key (the CPU), top-N, delete one key
if [ "$N" -ge 2 ]; then
	{
		echo 'top 1:'; echo 'c[0]:'; log2_chart 1; echo
		echo 'after delete(c, 0):'
		for ((i = 1; i < N; i++)); do echo "c[$i]:"; log2_chart 1; echo; done
	} > "$T/keys.want"
	sed -n '/^top 1:$/,/^after clear(h):$/p' "$T/all.out" | sed '$d' > "$T/keys.out"
	golden keys "one chart per CPU key; print_hist(c, 1) prints the top key; delete(c, 0)"
else
	ktap_test_skip "one chart per CPU key: one CPU online"
fi

# 6. clear(): nothing left to print
if sed -n '/^after clear(h):$/{n;p}' "$T/all.out" | grep -q '^count '; then
	ktap_test_pass "clear(h): print(h) prints nothing"
else
	ktap_test_fail "clear(h): print(h) prints nothing"
fi

# 7. no end handler: the aggregations are printed when tracing stops
cat > "$T/auto.kp" <<'EOF'
var s = stats()
var h = hist()
trace syscalls:sys_enter_read /fd == 42/ {
	s[execname] <<< e.count
	h["all"] <<< e.count
}
EOF
run_reads "$T/auto.kp" "$T/auto.out"
{
	echo "s[ktap_workload]: count $((15 * N)), sum $sum, avg $((sum / (15 * N))), min 1, max 1000"
	echo 'h[all]:'; log2_chart "$N"; echo
} > "$T/auto.want"
golden auto "no trace_end: every aggregation printed at the end"

# 8. `<<<` into a plain table is a compile-time error with its position
printf 'var t = {}\ntrace syscalls:sys_enter_read {\n\tt[execname] <<< 1\n}\n' > "$T/bad.kp"
"$KTAP" -b "$T/bad.kp" > /dev/null 2> "$T/bad.err"
rc=$?
if [ $rc = 1 ] && grep -qxF "$T/bad.kp:3:2: error: 't' is a table: '<<<' records into an aggregation (t = hist(), lhist(min, max, step), stats() or ptable())" "$T/bad.err"; then
	ktap_test_pass "<<< into a table: compile error at file:line:col"
else
	sed 's/^/# /' "$T/bad.err"
	ktap_test_fail "<<< into a table: compile error (rc $rc)"
fi

# 9. periodic print-and-clear runs in constant memory: the session's
# memory after 200 periods is what it is after 5
cat > "$T/tick.kp" <<'EOF'
var h = hist()
var n = 0
var periods = 0
var limit = tonumber(arg[1])
profile-1ms {
	h[cpu] <<< n
	n += 1
}
tick-10ms {
	print(h)
	clear(h)
	periods += 1
	if (periods >= limit) {
		exit()
	}
}
EOF
timeout 120 "$KTAP" -q -v "$T/tick.kp" 200 > "$T/tick.out" 2> "$T/tick.err"
rc=$?
charts=$(grep -c '^h\[[0-9]*\]:$' "$T/tick.out")
mem1=$(sed -n 's/.*memory \([0-9]*\) of .*/\1/p' "$T/tick.err")
timeout 60 "$KTAP" -q -v "$T/tick.kp" 5 > /dev/null 2> "$T/tick5.err"
mem0=$(sed -n 's/.*memory \([0-9]*\) of .*/\1/p' "$T/tick5.err")
if [ $rc = 0 ] && [ "${charts:-0}" -ge 200 ] && [ -n "$mem0" ] && [ "$mem1" = "$mem0" ]; then
	ktap_test_pass "print and clear from a tick: $charts charts in 200 periods, session memory $mem1 bytes, as after 5"
else
	ktap_print_msg "rc $rc, $charts charts, memory $mem1 (after 5 periods: $mem0)"
	sed 's/^/# /' "$T/tick.err" | head
	ktap_test_fail "print and clear from a tick runs in constant memory"
fi

# 10. -f json: every line of a real run is one JSON object; the
# aggregations carry their numbers
cat > "$T/json.kp" <<'EOF'
var h = hist()
var l = lhist(0, 100, 10)
var s = stats()
trace syscalls:sys_enter_read /fd == 42/ {
	h[execname] <<< e.count
	l[execname, "q\"t"] <<< e.count
	s[execname] <<< e.count
	if (e.count == 1000) {
		printf("read %d \"quoted\"\ttab %s\n", e.count, "\xff\xc3\xa9")
	}
}
EOF
timeout 120 "$KTAP" -q -f json "$T/json.kp" -- sh -c "exec '$WORKLOAD' reads 42 > /dev/null" \
	> "$T/json.out" 2> "$T/json.err"
rc=$?
if command -v python3 > /dev/null; then
	python3 - "$T/json.out" "$N" > "$T/json.check" 2>&1 <<'EOF'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
objs = [json.loads(line) for line in open(path, encoding='utf-8')]
want_h = [(1, 2, n), (2, 4, 5 * n), (64, 128, 4 * n), (512, 1024, 5 * n)]
hist = [o for o in objs if o['type'] == 'hist' and o['name'] == 'h']
assert len(hist) == 1 and hist[0]['key'] == 'ktap_workload', hist
got_h = [(b['min'], b['max'], b['count']) for b in hist[0]['buckets'] if b['count']]
assert got_h == want_h, got_h
assert len(hist[0]['buckets']) == 10, hist[0]['buckets']
lin = [o for o in objs if o['type'] == 'hist' and o['name'] == 'l']
assert lin[0]['key'] == 'ktap_workload, q"t', lin
assert lin[0]['buckets'][0] == {'min': 0, 'max': 10, 'count': 6 * n}, lin
assert lin[0]['buckets'][-1] == {'min': 100, 'max': None, 'count': 9 * n}, lin
st = [o for o in objs if o['type'] == 'stats']
assert st == [{'type': 'stats', 'name': 's', 'key': 'ktap_workload',
               'count': 15 * n, 'sum': 5414 * n, 'avg': 5414 * n // (15 * n),
               'min': 1, 'max': 1000}], st
lines = [o['data'] for o in objs if o['type'] == 'line']
# \xff is not UTF-8: escaped as U+00FF; \xc3\xa9 is e-acute, kept
assert lines == ['read 1000 "quoted"\ttab \u00ff\u00e9'] * (5 * n), lines[:2]
print(len(objs), 'objects')
EOF
	prc=$?
	if [ $rc = 0 ] && [ $prc = 0 ] && grep -q objects "$T/json.check"; then
		ktap_test_pass "-f json: $(cat "$T/json.check") parsed, hist, lhist and stats exact"
	else
		sed 's/^/# /' "$T/json.check" | tail -5
		head -5 "$T/json.out" | sed 's/^/# /'
		ktap_test_fail "-f json: every line parses, numbers exact (rc $rc)"
	fi
else
	ktap_test_skip "-f json: no python3"
fi

# 11. strings: sprintf, substr, strcmp, contains, join
cat > "$T/str.kp" <<'EOF'
var t = {}
t[1] = "a"
t[2] = 7
t[3] = "c"
print(sprintf("[%-6s|%5d|%05d|%x|%.3s|%+d]", "ab", 42, 42, 255, "abcdef", 3))
print(substr("hello", 2, 3), substr("hello", -3), substr("hello", 4, 100), substr("hello", 9))
print(strcmp("a", "b"), strcmp("b", "a"), strcmp("ab", "ab"), strcmp("ab", "abc"))
print(contains("kworker/0:1", "work"), contains("a", "ab"), contains("abc", ""))
print(join(t), join(t, ", "))
var long = sprintf("%0255d%0255d%0255d%0255d%0255d%0255d%0255d%0255d%0255d", 1, 2, 3, 4, 5, 6, 7, 8, 9)
print(len(long))
EOF
"$KTAP" -q "$T/str.kp" > "$T/str.out" 2>&1
printf '%s\n' '[ab    |   42|00042|ff|abc|+3]' "ell	llo	lo	" '-1	1	0	-1' \
	'true	false	true' 'a 7 c	a, 7, c' 2047 > "$T/str.want"
golden str "sprintf, substr, strcmp, contains, join; sprintf truncates at 2,047 bytes"

# 12. %p prints a hashed pointer, not the address, unless kptr_restrict
# shows addresses to the loader (1, and we have CAP_SYSLOG as root)
KR=/proc/sys/kernel/kptr_restrict
kr=$(cat $KR 2> /dev/null)
echo 0 > $KR 2> /dev/null
"$KTAP" -q -e 'printf("%p\n", 0xffffffff81000000)' > "$T/p.out" 2>&1
echo 1 > $KR 2> /dev/null
"$KTAP" -q -e 'printf("%p\n", 0xffffffff81000000)' > "$T/p1.out" 2>&1
[ -n "$kr" ] && echo "$kr" > $KR
if [ -s "$T/p.out" ] && ! grep -qi 'ffffffff81000000' "$T/p.out" &&
   { [ -z "$kr" ] || grep -qx '0xffffffff81000000' "$T/p1.out"; }; then
	ktap_test_pass "%p: hashed ($(cat "$T/p.out")) with kptr_restrict 0, raw with 1 for root"
else
	ktap_test_fail "%p: hashed '$(cat "$T/p.out")', kptr_restrict 1: '$(cat "$T/p1.out")'"
fi

ktap_finished
