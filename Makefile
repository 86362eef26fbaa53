# SPDX-License-Identifier: GPL-2.0
#
# ktap repository entry points. The kernel tree is prepared and built in
# $(KTAP_CACHE) (default ~/.cache/ktap); KERNEL_SRC=/path uses another tree.
#
#   make run [SCRIPT=file.kp | E='one-liner'] [ARGS='...']
#   make vm CMD='shell command'      run a command as root in the test guest
#   make check                       the whole test suite ("N passed, N failed")
#   make kernel | kernel-debug       prepare the tree, build a test kernel
#   make tools                       build tools/ktap (standalone)
#   make series                      regenerate series/ from harness/series.plan
#   make bench                       the benchmark (harness/bench)
#   make bench-check                 quick icount run; fails on a row >5% worse
#                                    than harness/bench-baseline
#   make profile E='one-liner'       guest instructions per event, by kernel
#                                    function (harness/profile)
#   make fuzz [FUZZ_COUNT=100000]    generated-image fuzzer, debug kernel (harness/fuzz)
#   make clean | distclean
#
# Variables reach the harness scripts through the environment, so CMD, E and
# ARGS may contain any quoting.

# Taken literally: make would otherwise expand $H, $P... inside them before
# the scripts see them. A simply expanded variable is exported as it is.
override CMD := $(value CMD)
override SCRIPT := $(value SCRIPT)
override E := $(value E)
override ARGS := $(value ARGS)
export CMD SCRIPT E ARGS KERNEL_SRC KTAP_CACHE
export FUZZ_COUNT FUZZ_SEED FUZZ_KERNEL FUZZ_TIMEOUT FUZZ_WATCHDOG FUZZ_NO_BUILD \
	FUZZ_BIN FUZZ_ARGS
SHELL := /bin/bash
H := harness

.PHONY: all help deps prepare kernel kernel-debug tools vm vm-debug run check \
	series bench bench-check profile fuzz clean distclean

all: help

help:
	@sed -n '3,21p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@$(H)/install-deps

prepare: deps
	@$(H)/prepare-tree

kernel: deps
	@$(H)/build-kernel normal

kernel-debug: deps
	@$(H)/build-kernel debug

tools:
	@if [ -f tools/ktap/Makefile ]; then $(MAKE) -C tools/ktap; \
	else echo "tools/ktap/Makefile does not exist yet" >&2; exit 1; fi

vm: deps
	@[ -n "$$CMD" ] || { echo 'usage: make vm CMD="command"' >&2; exit 2; }
	@$(H)/build-kernel normal >/dev/null
	@$(H)/vm -c "$$CMD"

vm-debug: deps
	@[ -n "$$CMD" ] || { echo 'usage: make vm-debug CMD="command"' >&2; exit 2; }
	@$(H)/build-kernel debug >/dev/null
	@KTAP_VM_KERNEL=$${KTAP_CACHE:-$$HOME/.cache/ktap}/build-debug/arch/x86/boot/bzImage \
		$(H)/vm -c "$$CMD"

run: deps
	@$(H)/run

check: deps
	@$(H)/check

series:
	@$(H)/mkseries

bench: deps
	@$(H)/bench

bench-check: deps
	@$(H)/bench --check

profile: deps
	@$(H)/profile "$$E"

fuzz: deps
	@$(H)/fuzz

clean:
	-@[ -f tools/ktap/Makefile ] && $(MAKE) -s -C tools/ktap clean || true
	-@$(MAKE) -s -C tools/testing/selftests/ktap clean >/dev/null 2>&1 || true

# Removes the prepared tree and build directories (not the pristine sources).
distclean: clean
	@c=$${KTAP_CACHE:-$$HOME/.cache/ktap}; \
	echo "removing $$c/{tree,build-*,cfg-*,series-git,logs,run}"; \
	rm -rf $$c/tree $$c/build-* $$c/cfg-* $$c/series-git $$c/logs $$c/run
