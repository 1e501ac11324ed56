# Shared by the mount tests (tests/mount_*.sh): temporary trees, mounting
# with guaranteed unmount, byte-exact checks.  Source it, then use:
#   need_fuse                      skip (77) where /dev/fuse is missing
#   pf_mount SRC MNT [opts...]     mount prefetchfs, checked; unmounted at exit
#   ok "what"  / fail "what"       one checked line each
#   stats_json MNT                 contents of MNT/.prefetchfs/stats
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PF="$TOP/prefetchfs"
HELPERS="$TOP/tests/helpers"
WORK=$(mktemp -d /tmp/pftest.XXXXXX)
MOUNTS=()
DAEMON_LOGS=()
FAILS=0
# sanitizer reports of the daemon (it detaches from stderr) land here
export ASAN_OPTIONS="log_path=$WORK/sanitizer:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="log_path=$WORK/sanitizer:print_stacktrace=1:${UBSAN_OPTIONS:-}"

cleanup() {
	local m
	for m in "${MOUNTS[@]}"; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	# give daemons a moment to exit, then make sure none is left
	sleep 0.2
	pkill -f "prefetchfs.*$WORK" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_fuse() {
	if [ ! -c /dev/fuse ]; then
		echo "no /dev/fuse on this machine"
		exit 77
	fi
}

ok() { echo "ok $*"; }
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}
check() { # check "what" command...
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
# Unmount everything and wait until the daemons have exited.
unmount_all() {
	local m i
	for m in "${MOUNTS[@]}"; do
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u "$m"
	done
	for i in $(seq 100); do
		pgrep -f "prefetchfs.*$WORK" >/dev/null || return 0
		sleep 0.1
	done
	fail "a prefetchfs daemon did not exit after unmount"
}

finish() {
	unmount_all
	check_daemon_logs
	if [ "$FAILS" -gt 0 ]; then
		echo "$FAILS check(s) failed"
		exit 1
	fi
	exit 0
}

# pf_mount SRC MNT [prefetchfs options...]: foreground daemon whose output
# goes to a log, checked for sanitizer reports and errors at the end.
pf_mount() {
	local src=$1 mnt=$2
	shift 2
	mkdir -p "$mnt"
	local log="$WORK/daemon.$(basename "$mnt").log"
	MOUNTS+=("$mnt")
	DAEMON_LOGS+=("$log")
	"$PF" "$@" "$src" "$mnt" >"$log" 2>&1
	local rc=$?
	if [ $rc -ne 0 ] || ! mountpoint -q "$mnt"; then
		echo "mount of $src on $mnt failed (exit $rc):"
		cat "$log"
		return 1
	fi
	return 0
}

pf_umount() {
	fusermount3 -u "$1"
}

# A daemon that printed a sanitizer report or an unexpected error fails
# the test (background daemons log to syslog; tests mount with -f where
# they need the log).
check_daemon_logs() {
	local l
	for l in "$WORK"/sanitizer.*; do
		[ -f "$l" ] || continue
		fail "sanitizer report from the daemon: $l"
		cat "$l"
	done
	for l in "${DAEMON_LOGS[@]}"; do
		[ -f "$l" ] || continue
		if grep -qE 'AddressSanitizer|UndefinedBehaviorSanitizer|runtime error:|LeakSanitizer' "$l"; then
			fail "sanitizer report in $l"
			cat "$l"
		fi
	done
}

stats_json() { cat "$1/.prefetchfs/stats"; }

# json_get FILE-or-STRING PYTHON-EXPR: evaluate EXPR on the parsed stats as `s`
json_eval() {
	python3 -c 'import json,sys; s=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1"
}

# mkfile PATH SIZE_BYTES: deterministic incompressible content
mkfile() {
	head -c "$2" <(openssl enc -aes-128-ctr -pass pass:"$1" -nosalt -pbkdf2 </dev/zero 2>/dev/null) >"$1"
}

same() { cmp -s "$1" "$2"; }
