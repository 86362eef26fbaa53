# SPDX-License-Identifier: GPL-2.0
# Common settings for the ktap harness scripts. Source it; do not run it.
#
# KTAP_CACHE   cache root (default ~/.cache/ktap)
# KERNEL_SRC   use this kernel tree instead of $KTAP_CACHE/tree
# KTAP_PRISTINE pristine 6.12 tree (default $KTAP_CACHE/linux-source-6.12)

KTAP_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KTAP_CACHE=${KTAP_CACHE:-$HOME/.cache/ktap}
KTAP_PRISTINE=${KTAP_PRISTINE:-$KTAP_CACHE/linux-source-6.12}
KTAP_TREE=${KERNEL_SRC:-$KTAP_CACHE/tree}
KTAP_SRC_TARBALL=${KTAP_SRC_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
KTAP_LOGS=$KTAP_CACHE/logs
export KTAP_REPO KTAP_CACHE KTAP_PRISTINE KTAP_TREE

# Repo paths that are copied over the kernel tree.
KTAP_OVERLAY_PATHS=(
	kernel/trace/ktap
	include/uapi/linux/ktap.h
	tools/ktap
	tools/testing/selftests/ktap
	Documentation/trace/ktap.rst
	# fuzzer inputs (binary) stay in this repository, out of the series
	':(exclude)tools/ktap/fuzz/vm/corpus'
)

# Patches to existing kernel files: integration/*.patch, and the MAINTAINERS
# entry at the top of the repository. Prints repo-relative paths.
ktap_patches() {
	(cd "$KTAP_REPO" && ls integration/*.patch MAINTAINERS.patch 2>/dev/null)
}

ktap_builddir() { echo "$KTAP_CACHE/build-$1"; }

# make in the prepared tree, compilers through ccache
KTAP_MAKE=(make -s -C "$KTAP_TREE" CC="ccache gcc" HOSTCC="ccache gcc")

die() { echo "${0##*/}: error: $*" >&2; exit 1; }
note() { echo "${0##*/}: $*" >&2; }

# Take the build lock (serializes tree preparation and kernel builds of
# everyone sharing $KTAP_CACHE). Re-entrant through KTAP_LOCK_HELD.
ktap_lock() {
	[ "${KTAP_LOCK_HELD:-}" = 1 ] && return 0
	mkdir -p "$KTAP_CACHE"
	exec 9>"$KTAP_CACHE/build.lock"
	if ! flock -n 9; then
		note "waiting for $KTAP_CACHE/build.lock (another build is running)"
		flock 9
	fi
	export KTAP_LOCK_HELD=1
}
