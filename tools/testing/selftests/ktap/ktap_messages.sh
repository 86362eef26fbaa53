#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The messages of tools/ktap/ktap that tell a user what went wrong and
# what to do, with their exit status: one test per row of the table in
# Documentation/trace/ktap.rst ("Messages"). Each runs the real tool on
# the real kernel and matches its whole message.
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
CONTROL=/sys/kernel/tracing/ktap/control

ktap_print_header
[ "$(id -u)" = 0 ] || { ktap_skip_all "must run as root"; exit "$KSFT_SKIP"; }
[ -e "$CONTROL" ] || { ktap_skip_all "$CONTROL missing (CONFIG_KTAP?)"; exit "$KSFT_SKIP"; }
[ -x "$KTAP" ] || { ktap_skip_all "ktap tool not built"; exit "$KSFT_SKIP"; }
ktap_set_plan 14

T=$(mktemp -d)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT

# check NAME RC STDERR-ERE [STDOUT-ERE]: the last run's exit status is RC,
# its stderr has a line matching STDERR-ERE (and stdout STDOUT-ERE, or is
# empty when that is "-").
check() {
	local name=$1 want=$2 err=$3 out=${4:-}

	if [ "$rc" = "$want" ] && grep -qE -- "$err" "$T/err" &&
	   { [ -z "$out" ] || { [ "$out" = - ] && [ ! -s "$T/out" ]; } ||
	     { [ "$out" != - ] && grep -qE -- "$out" "$T/out"; }; }; then
		ktap_test_pass "$name"
	else
		ktap_print_msg "exit status $rc (want $want); stderr, stdout:"
		sed 's/^/#   /' "$T/err" "$T/out" | head -12
		ktap_test_fail "$name"
	fi
}

# kt ARGS...: run the tool with a time limit, stdout/stderr to files.
kt() {
	timeout 60 "$KTAP" "$@" > "$T/out" 2> "$T/err"
	rc=$?
}

# 1. not root
if command -v setpriv > /dev/null; then
	timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$KTAP" -e 'tick-1s { exit() }' > "$T/out" 2> "$T/err"
	rc=$?
	check "not root: says it needs root or CAP_SYS_ADMIN" 1 \
		"^ktap: cannot open $CONTROL: Permission denied \(ktap needs root: run it as root, or with CAP_SYS_ADMIN\)$" -
else
	ktap_test_skip "not root: no setpriv"
fi

# 2. a PID that does not exist
pid=99999
while [ -e /proc/$pid ]; do pid=$((pid + 1)); done
kt -p $pid -e 'tick-1s { exit() }'
check "unknown pid: no process with pid N" 1 "^ktap: no process with pid $pid$" -

# 3.-5. a command that cannot start: its errno text, status 127, nothing
# traced (no "Tracing..." line, no output of the script)
S='trace syscalls:sys_enter_getppid { print("traced") } tick-1ms { print("traced") }'
kt -e "$S" -- /nonexistent/cmd
check "-- /nonexistent/cmd: ENOENT text, status 127, nothing traced" 127 \
	'^ktap: cannot run /nonexistent/cmd: No such file or directory$' -
grep -q Tracing "$T/err" && ktap_print_msg "but: Tracing... was printed"
kt -e "$S" -- no-such-command-in-path
check "-- a command not in PATH: ENOENT text, status 127, nothing traced" 127 \
	'^ktap: cannot run no-such-command-in-path: No such file or directory$' -
printf 'not a program\n' > "$T/noexec"
chmod 644 "$T/noexec"
kt -e "$S" -- "$T/noexec"
check "-- a file without x permission: EACCES text, status 127" 127 \
	"^ktap: cannot run $T/noexec: Permission denied$" -

# 6. a kernel function that does not exist: named errno and the reason
kt -e 'trace probe:no_such_function_for_ktap { print("x") }'
cat "$T/out" >> "$T/err"	# the kernel's reasons come with the session's output
check "kprobe on a missing function: -ENOENT, no such function" 1 \
	'cannot attach probe 0 \(probe:no_such_function_for_ktap\): error -(ENOENT|2): no such function in the kernel or its modules$'

# 7. a function kprobes refuse (x86: exc_int3 is on the blacklist)
if awk '$2 == "exc_int3" { f = 1 } END { exit !f }' /sys/kernel/debug/kprobes/blacklist 2> /dev/null; then
	kt -e 'trace probe:exc_int3 { print("x") }'
	cat "$T/out" >> "$T/err"
	check "kprobe on a blacklisted function: -EINVAL and why" 1 \
		'cannot attach probe 0 \(probe:exc_int3\): error -(EINVAL|22): kprobes refuse this function \(blacklisted, noinstr or entry code\)$'
else
	ktap_test_skip "blacklisted function: exc_int3 not on this kernel's kprobe blacklist"
fi

# 8. set_retval on a function that is not error-injectable: the rule,
# not a bare errno, and no second "KTAP_IOC_START: ..." line
kt -e 'trace probe:vfs_read { e.set_retval(-5) }'
cat "$T/out" >> "$T/err"
if ! grep -q KTAP_IOC_START "$T/err"; then
	check "set_retval on a non-injectable function: not on the error-injection list" 1 \
		"^ktap: e.set_retval\(\) on vfs_read: the function is not on the kernel's error-injection list$"
else
	check "set_retval on a non-injectable function: no bare KTAP_IOC_START line" 1 '^$'
fi

# 9.-10. an error-injectable function of this kernel (personality(2) on
# x86, which setarch calls)
inj=__x64_sys_personality
if ! grep -q "^$inj[[:space:]]*ERRNO" /sys/kernel/debug/error_injection/list 2> /dev/null ||
   ! command -v setarch > /dev/null; then
	ktap_test_skip "set_retval in a return probe: no $inj to inject into, or no setarch"
	ktap_test_skip "set_retval(5) on an errno function: no $inj to inject into, or no setarch"
else
	kt -e "trace probe:$inj%return { e.set_retval(-12) }"
	check "set_retval in a return probe: needs the function's entry" 1 \
		"^ktap: kernel rejected bytecode: probe 'probe:$inj%return': e.set_retval\(\) needs a kprobe at the entry of $inj \(offset 0, not a return probe\)"
	# a value the function cannot return: refused when run, with the
	# rule of its error type
	kt -e "trace probe:$inj { e.set_retval(5) }" -- setarch x86_64 /bin/true
	cat "$T/out" >> "$T/err"
	check "set_retval(5) on an errno function: refused with the rule" 1 \
		"e\.set_retval\(5\) on $inj refused: the function fails only with a negative errno"
fi

# 11.-12. bpftrace input: exactly one hint line
kt -e 'tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }'
n=$(grep -c '^ktap: hint: this looks like bpftrace; ktap writes `trace syscalls:sys_enter_openat { t\[execname\] += 1 }`' "$T/err")
rc="$rc hints=$n"
check "bpftrace tracepoint and @map: one hint line" "1 hints=1" 'error'
printf 'BEGIN {\n\tprintf("hello\\n");\n}\n' > "$T/bt.bt"
kt "$T/bt.bt"
n=$(grep -c '^ktap: hint: this looks like bpftrace' "$T/err")
rc="$rc hints=$n"
check "bpftrace BEGIN block: one hint line" "1 hints=1" "^$T/bt.bt:1:"

# 13. a ktap syntax error gets no such hint
kt -e 'trace syscalls:sys_enter_openat { x = 1 + }'
n=$(grep -c 'hint' "$T/err")
rc="$rc hints=$n"
check "a ktap syntax error: no bpftrace hint" "1 hints=0" "unexpected '}'"

# 14. an unknown event: file:line:col and the caret
kt -e 'trace sched:no_such_event { print("x") }'
check "unknown tracepoint: position and name" 1 \
	"^<command line>:1:7: error: unknown event 'sched:no_such_event'$" -

ktap_finished
