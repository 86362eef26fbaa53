#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Host tests of tools/ktap (no kernel needed), printed as TAP:
#   1. every sample compiles (and passes the image self-check)
#   2. golden -b listings: tests/golden/NAME.kp -> NAME.expected, and
#      golden -A syntax trees (after folding and resolution):
#      tests/ast/NAME.kp -> NAME.expected
#   3. bad inputs: tests/errors.table, exact first diagnostic + status 1
#   4. the same samples and bad inputs under ASan/UBSan (leaks included)
#   5. command line behaviour (-h, -V, -le, -lf, -o, -e, -s, errors)
#   6. size of the stripped tool
#   7. the bounded fuzz run ($FUZZ_CHECK), when given
#   8. the kernel's VM core built in user space (fuzz/vm): its corpus
#      replayed under gcc ASan/UBSan ($VM_REPLAY) and a bounded libFuzzer
#      run ($FUZZ_VM_CHECK), when given
# Environment: KTAP (the tool), KTAP_ASAN (sanitizer build), FUZZ_CHECK,
# VM_REPLAY, FUZZ_VM_CHECK.
# Exit status: 0 when every test passed.

cd "$(dirname "$0")/.." || exit 1
KTAP=${KTAP:-./ktap}
abspath() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
KTAP=$(abspath "$KTAP")
[ -n "$KTAP_ASAN" ] && KTAP_ASAN=$(abspath "$KTAP_ASAN")
KTAP_TRACEFS=$(pwd)/tests/tracefs
KTAP_KALLSYMS=/dev/null
export KTAP_TRACEFS KTAP_KALLSYMS
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS UBSAN_OPTIONS
# One directory per run: the harness may run this beside a developer.
OUT=tests/out/run.$$
rm -rf "$OUT"
mkdir -p "$OUT/errors"

n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { # check NAME: run the rest, pass on status 0
	name=$1
	shift
	if "$@" > "$OUT/last.log" 2>&1; then
		ok "$name"
	else
		not_ok "$name"
		sed 's/^/# /' "$OUT/last.log" | head -20
	fi
}

# 1. samples
for f in samples/*.kp; do
	check "sample $(basename "$f") compiles" "$KTAP" -b "$f" 7
done

# 2. golden outputs: golden LABEL OPTION DIR runs ktap OPTION on every
# DIR/NAME.kp (with script arguments: a 42) against DIR/NAME.expected
golden() {
	label=$1 opt=$2 dir=$3
	for f in "$dir"/*.kp; do
		exp=${f%.kp}.expected
		name=$(basename "$f" .kp)
		if "$KTAP" "$opt" "$f" a 42 > "$OUT/$name.$label" 2>&1 &&
		   cmp -s "$OUT/$name.$label" "$exp"; then
			ok "$label $name"
		else
			not_ok "$label $name"
			diff -u "$exp" "$OUT/$name.$label" | head -30 | sed 's/^/# /'
		fi
	done
}
golden golden -b tests/golden
golden "syntax tree" -A tests/ast

# 3. bad inputs: split the table into NAME.kp and NAME.err files
awk -v dir="$OUT/errors" '
	/^### / { name = $2; kp = dir "/" name ".kp"; printf "" > kp;
		  print name >> (dir "/list"); next }
	/^!!! / { sub(/^!!! /, ""); print name ".kp:" $0 > (dir "/" name ".err"); next }
	/^@@@ / { sub(/^@@@ /, ""); print $0 > (dir "/" name ".gen"); next }
	/^#/ && !name { next }
	name && /^$/ { next }
	name { print >> kp }
' tests/errors.table
bad_case() { # bad_case TOOL LABEL NAME
	tool=$1 label=$2 c=$3
	(cd "$OUT/errors" &&
	 "$tool" -b "$c.kp" > /dev/null 2> "$c.$label.stderr"
	 echo $? > "$c.$label.rc")
	exp=$(cat "$OUT/errors/$c.err")
	got=$(grep -m1 ': error: ' "$OUT/errors/$c.$label.stderr")
	rc=$(cat "$OUT/errors/$c.$label.rc")
	if [ "$rc" = 1 ] && [ "$got" = "$exp" ]; then
		ok "$label bad input $c: $exp"
	else
		not_ok "$label bad input $c"
		echo "# expected: $exp (status 1)"
		echo "# got:      $got (status $rc)"
		head -5 "$OUT/errors/$c.$label.stderr" | sed 's/^/# /'
	fi
}
for c in $(cat "$OUT/errors/list"); do
	if [ -f "$OUT/errors/$c.gen" ]; then
		sh "$OUT/errors/$c.gen" > "$OUT/errors/$c.kp"
	fi
	bad_case "$KTAP" error "$c"
done
nbad=$(wc -l < "$OUT/errors/list")
if [ "$nbad" -ge 60 ]; then
	ok "error table has $nbad cases (at least 60)"
else
	not_ok "error table has $nbad cases (at least 60)"
fi

# 4. sanitizers: samples, golden and bad inputs again
if [ -n "$KTAP_ASAN" ] && [ -x "$KTAP_ASAN" ]; then
	for f in samples/*.kp tests/golden/*.kp; do
		check "asan $(basename "$f")" "$KTAP_ASAN" -b "$f" a 42
	done
	for c in $(cat "$OUT/errors/list"); do
		bad_case "$KTAP_ASAN" asan "$c"
	done
else
	echo "# no sanitizer build (KTAP_ASAN): skipped"
fi

# 5. the command line
check "-h prints usage" sh -c "'$KTAP' -h | grep -q '^Usage: ktap'"
check "-V prints tool and kernel versions" sh -c \
	"'$KTAP' -V | grep -q '^ktap .*bytecode ABI' && '$KTAP' -V | grep -q '^kernel: '"
check "unknown option fails" sh -c "! '$KTAP' -Z x 2>/dev/null"
check "missing script fails" sh -c "! '$KTAP' 2>/dev/null"
check "unreadable script fails with a message" sh -c \
	"'$KTAP' -b /nonexistent.kp 2>&1 | grep -q 'cannot open /nonexistent.kp'"
check "-e one-liner compiles" sh -c \
	"'$KTAP' -b -e 'print(\"hello\")' | grep -q 'CALLB *r0 1 print'"
check "-e names the command line in errors" sh -c \
	"'$KTAP' -b -e 'print(' 2>&1 | grep -q '^<command line>:1:7: error:'"
check "-s EVENT is trace EVENT { print(...) }" sh -c \
	"'$KTAP' -b -s sched:sched_switch | grep -q 'probe 0: tracepoint \"sched:sched_switch\" target \"sched:sched_switch\"'"
check "-o FILE writes the listing" sh -c \
	"'$KTAP' -b -o '$OUT/o.txt' samples/syscalls.kp && grep -q ATTACH '$OUT/o.txt'"
check "-le lists events matching a glob" sh -c \
	"'$KTAP' -le 'sched:*' | grep -qx 'sched:sched_switch' && ! '$KTAP' -le 'sched:*' | grep -q syscalls"
check "-lk lists the kprobe-able functions a glob matches" sh -c \
	"'$KTAP' -lk 'vfs_*' | grep -qx 'probe:vfs_read' && ! '$KTAP' -lk 'vfs_*' | grep -qv '^probe:vfs_'"
check "-lp lists software and hardware perf events" sh -c \
	"'$KTAP' -lp | grep -qx 'software:page-faults' && '$KTAP' -lp | grep -qx 'hardware:instructions'"
check "script arguments end at --" sh -c \
	"'$KTAP' -b -e 'print(arg[1], arg[2])' x -- true | grep -q 'k1 ; \"x\"'"
check "-p needs a number" sh -c "! '$KTAP' -p abc -e 'print(1)' 2>/dev/null"
if [ -r /bin/true ] && "$KTAP" -lf /bin/true > /dev/null 2>&1; then
	ok "-lf lists the functions of an ELF file"
else
	not_ok "-lf lists the functions of an ELF file"
fi
SDT=/usr/lib/x86_64-linux-gnu/libstdc++.so.6
if [ -r "$SDT" ]; then
	check "-lm lists SDT markers" sh -c "'$KTAP' -lm '$SDT' | grep -q '^sdt:$SDT:libstdcxx:throw\( \|$\)'"
fi
LIBC=/lib/x86_64-linux-gnu/libc.so.6
if [ -r "$LIBC" ]; then
	check "uprobe on libc malloc resolves to a file offset" sh -c \
		"'$KTAP' -b -e 'trace probe:$LIBC:malloc {}' | grep -q 'uprobe .* target \"$LIBC\" offset 0x[0-9a-f]'"
fi
if [ ! -e /sys/kernel/tracing/ktap/control ]; then
	check "running without the kernel side fails cleanly" sh -c \
		"! '$KTAP' -e 'print(1)' 2> '$OUT/nokernel' && grep -q 'ktap: cannot open /sys/kernel/tracing/ktap/control' '$OUT/nokernel'"
fi
check "-b accepts a kprobe on a kallsyms function ftrace does not list" sh -c \
	"printf 'ffffffff81001000 T __x64_sys_getppid\\n' > '$OUT/kallsyms' &&
	 KTAP_KALLSYMS='$OUT/kallsyms' '$KTAP' -b -e 'trace probe:__x64_sys_getppid {}' |
	 grep -q 'kprobe .* target \"__x64_sys_getppid\"' &&
	 ! KTAP_KALLSYMS='$OUT/kallsyms' '$KTAP' -b -e 'trace probe:__x64_sys_getppidd {}' 2>/dev/null"
check "several errors are reported in one run, sorted" sh -c \
	"printf 'x = (1\ny = \$\nprint(zzz())\n' > '$OUT/multi.kp';
	 '$KTAP' -b '$OUT/multi.kp' 2>&1 | grep ': error:' | cut -d: -f2 | tr '\n' ' ' | grep -qx '2 2 3 '"
check "-1 counts argN from 1 (ktap 0.4) and refuses arg0" sh -c \
	"'$KTAP' -b -1 -e 'trace sched:sched_switch { print(arg1, arg7) }' | grep -A1 'LOADI *r3 0' | grep -q 'CALLB.*argn' &&
	 '$KTAP' -b -1 -e 'trace sched:sched_switch { print(arg1, arg7) }' | grep -A1 'LOADI *r4 6' | grep -q 'CALLB.*argn' &&
	 ! '$KTAP' -b -1 -e 'trace sched:sched_switch { print(arg0) }' 2>/dev/null"
check "a global nobody assigns reads as nil, with a warning" sh -c \
	"'$KTAP' -b -e 'counter = {}
if (0) { countr[1] = 0 }
print(countr)' 2> '$OUT/warn' > '$OUT/warn.lst' &&
	 grep -qx \"<command line>:2:10: warning: 'countr' is never assigned: it reads as nil (did you mean 'counter'?)\" '$OUT/warn' &&
	 [ \$(grep -c warning '$OUT/warn') = 1 ] && grep -q 'GETGLOBAL' '$OUT/warn.lst'"
check "errors show the source line and a caret" sh -c \
	"printf 'var a = 1\nprint(b)\n' > '$OUT/caret.kp';
	 '$KTAP' -b '$OUT/caret.kp' 2>&1 | sed -n 2,3p | tr '\n' '|' | grep -qx ' print(b)| {6}\\^|' ||
	 '$KTAP' -b '$OUT/caret.kp' 2>&1 | sed -n 3p | grep -qx '       ^'"

ksym_literal() { # `name` is an address from kallsyms, of any symbol type
	printf 'ffffffff81001000 T vfs_read\nffffffff82000040 D jiffies\n' > "$OUT/kallsyms2"
	printf 'print(%s)\nprint(%s)\n' '`jiffies`' '`vfs_read`' > "$OUT/ksym.kp"
	KTAP_KALLSYMS="$OUT/kallsyms2" "$KTAP" -b "$OUT/ksym.kp" > "$OUT/ksym.lst" || return 1
	grep -q 'LOADK .* ; -2113929152$' "$OUT/ksym.lst" || return 1
	grep -q 'LOADK .* ; -2130702336$' "$OUT/ksym.lst" || return 1
	printf 'print(%s)\n' '`kp_call`' > "$OUT/ksym2.kp"
	! KTAP_KALLSYMS="$OUT/kallsyms2" "$KTAP" -b "$OUT/ksym2.kp" 2> "$OUT/ksym2.err" || return 1
	grep -q "ksym2.kp:1:7: error: unknown kernel symbol 'kp_call'" "$OUT/ksym2.err"
}
check "\`name\` is the address kallsyms shows; an unknown name is an error" ksym_literal
long_diag() { # a long event definition quoted in a message: bounded
	awk 'BEGIN { s = "trace probe:vf"; for (i = 0; i < 1200; i++) s = s "."
		     print s " {}" }' > "$OUT/long.kp"
	"${KTAP_ASAN:-$KTAP}" -b "$OUT/long.kp" 2> "$OUT/long.err"
	[ $? = 1 ] || return 1
	[ "$(head -1 "$OUT/long.err" | wc -c)" -le 1000 ] || return 1
	head -1 "$OUT/long.err" | grep -q "^$OUT/long.kp:1:7: error: bad event definition 'probe:vf\.\.\."
}
check "a 1200-byte event definition gives a bounded diagnostic" long_diag

# 6. size
if command -v strip > /dev/null; then
	strip -o "$OUT/ktap.stripped" "$KTAP"
	size=$(wc -c < "$OUT/ktap.stripped")
	# The budget of an embedded target: compiler, USDT and ELF
	# reading, output formatting, libc only.
	if [ "$size" -lt 153600 ]; then
		ok "stripped ktap is $size bytes (< 150 KB)"
	else
		not_ok "stripped ktap is $size bytes (< 150 KB)"
	fi
fi

# 7. fuzzing
if [ -n "$FUZZ_CHECK" ]; then
	if sh -c "$FUZZ_CHECK" > "$OUT/fuzz.log" 2>&1; then
		ok "$(grep '^fuzz:' "$OUT/fuzz.log" | tail -1)"
	else
		not_ok "fuzz run"
		tail -20 "$OUT/fuzz.log" | sed 's/^/# /'
	fi
fi

# 8. the VM core: corpus replay, then fuzzing
if [ -n "$VM_REPLAY" ]; then
	if sh -c "$VM_REPLAY" > "$OUT/vm-replay.log" 2>&1; then
		ok "vm core: $(grep '^replay:' "$OUT/vm-replay.log" | tail -1) of fuzz/vm/corpus, no bug under ASan/UBSan"
	else
		not_ok "vm core: fuzz/vm/corpus replay under ASan/UBSan"
		tail -30 "$OUT/vm-replay.log" | sed 's/^/# /'
	fi
fi
if [ -n "$FUZZ_VM_CHECK" ]; then
	if sh -c "$FUZZ_VM_CHECK" > "$OUT/fuzz-vm.log" 2>&1; then
		ok "vm core $(grep '^fuzz-vm:' "$OUT/fuzz-vm.log" | tail -1)"
	else
		not_ok "vm core fuzz run"
		tail -40 "$OUT/fuzz-vm.log" | sed 's/^/# /'
	fi
fi

echo "1..$n"
echo "# $((n - fails)) passed, $fails failed"
[ "$fails" = 0 ] && rm -rf "$OUT"
[ "$fails" = 0 ]
