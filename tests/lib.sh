# Shared by the mount tests (tests/mount_*.sh): temporary trees, mounting
# with guaranteed unmount, byte-exact checks.  Source it, then use:
#   need_fuse                      skip (77) where /dev/fuse is missing
#   pf_mount SRC MNT [opts...]     mount prefetchfs, checked; unmounted at exit
#   pf_mount_ready SRC MNT [opts...]  the same with the daemon in the
#                                  foreground (-f), its log checked
#   ok "what"  / fail "what"       one checked line each
#   stats_json MNT                 contents of MNT/.prefetchfs/stats
#   need_tools                     fail unless the binaries are built
#   slowfs_mount SRC MNT [opts...] mount bench/slowfs (a slow source)
#   pf_pid MNT                     pid of the prefetchfs daemon of MNT
#   rss_kb PID                     its resident set (VmRSS) in KiB
#   sanitized                      true if ./prefetchfs has ASAN/UBSAN
#   one_line_err FILE              true if FILE is one "prefetchfs: ..." line
#   guard MNT SECS CMD...          run CMD; if it hangs, kill MNT's daemon
#   kill_daemon MNT                SIGKILL the daemon of MNT, unmount MNT
#   wait_gone PID TENTHS / exited PID  PID has exited (a zombie has)
#   past_mtime FILE...             wait for a second later than their mtimes
#   quiet CMD...                   CMD with its output discarded
# PF_BIN=PATH in the environment runs the tests against another build of
# prefetchfs (a test that fails before a change, checked by hand).
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PF="${PF_BIN:-$TOP/prefetchfs}"
HELPERS="$TOP/tests/helpers"
WORK=$(mktemp -d /tmp/pftest.XXXXXX)
MOUNTS=()
DAEMON_LOGS=()
DAEMON_PIDS=()	# every daemon a test started (prefetchfs, bench/slowfs)
CLEANUP_HOOKS=()	# commands cleanup runs after the unmounts (servers.sh)
FAILS=0
# sanitizer reports of the daemon (it detaches from stderr) land here
export ASAN_OPTIONS="log_path=$WORK/sanitizer:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="log_path=$WORK/sanitizer:print_stacktrace=1:${UBSAN_OPTIONS:-}"

# Every mount and daemon is also written to $WORK/mounts and $WORK/pids:
# a mount made inside $(...) or ( ) changes no array of this shell, and
# cleanup must still find it.
track_mount() {
	MOUNTS+=("$1")
	echo "$1" >>"$WORK/mounts"
}
track_pid() {
	DAEMON_PIDS+=("$1")
	echo "$1" >>"$WORK/pids"
}

# is_mounted MNT: MNT is a mount point (from the mount table: never stats
# MNT, which would block on a hung daemon)
is_mounted() {
	awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo
}

# all_mounts: every mount of this test, one a line, newest first: the
# file's (in the order made) then the ones tests added to MOUNTS
# themselves, each once
all_mounts() {
	{
		cat "$WORK/mounts" 2>/dev/null
		printf '%s\n' "${MOUNTS[@]}"
	} | awk 'NF && !seen[$0]++' | tac
}

all_pids() {
	{
		cat "$WORK/pids" 2>/dev/null
		printf '%s\n' "${DAEMON_PIDS[@]}"
	} | awk 'NF && !seen[$0]++'
}

# cleanup (the EXIT trap) must run to its end whatever fails in it and
# whatever the caller set (errexit, nounset), and a second Ctrl-C must not
# cut it short: every step is bounded in time.
cleanup() {
	set +eu +o pipefail
	trap '' INT TERM HUP
	if [ -n "${PF_CLEANED:-}" ]; then
		return 0
	fi
	PF_CLEANED=1
	local m p pass mounts=() pids=()
	# background jobs of the test (readers, samplers) first: they may
	# hold files of the mounts open
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	mapfile -t mounts < <(all_mounts)
	# newest mount first: a mount stacked on another (prefetchfs over
	# slowfs) must go before the one it reads from; a second pass for a
	# lower mount that was still busy
	for pass in 1 2; do
		for m in "${mounts[@]}"; do
			is_mounted "$m" || continue
			p=$(mount_daemon_pid "$m")
			fusermount3 -u "$m" 2>/dev/null ||
				{ [ $pass -eq 2 ] && { fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; }; }
			[ -n "$p" ] && ! is_mounted "$m" && wait_gone "$p" 50
		done
	done
	# give daemons a moment to exit, then make sure none is left
	sleep 0.2
	pkill -f "$(pf_daemons_re)" 2>/dev/null
	# a daemon that still runs is stuck: kill it, which also aborts its
	# FUSE connection and so frees readers blocked on it
	mapfile -t pids < <(all_pids)
	for p in "${pids[@]}"; do
		wait_gone "$p" 20 || { ours "$p" && kill -9 "$p" 2>/dev/null; }
	done
	for m in "${mounts[@]}"; do
		is_mounted "$m" && fusermount3 -uz "$m" 2>/dev/null
	done
	# servers the daemons read from go last, before their files
	for p in "${CLEANUP_HOOKS[@]}"; do eval "$p"; done
	# (never into a mount that would not go)
	rm -rf --one-file-system "$WORK"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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
# unmount_busy_retry MNT: fusermount3 -u, again for up to 6 s while it
# says the mount is busy: the mount below a daemon that just exited (slowfs
# under prefetchfs) stays busy until the kernel has released that daemon's
# files, which on a loaded machine can take a moment.
unmount_busy_retry() {
	local i err
	for i in $(seq 30); do
		err=$(fusermount3 -u "$1" 2>&1) && return 0
		is_mounted "$1" || return 0
		case $err in *busy*) sleep 0.2 ;; *) break ;; esac
	done
	echo "$err" >&2
	return 1
}

unmount_all() {
	local m p mounts=()
	# newest first (see cleanup)
	mapfile -t mounts < <(all_mounts)
	for m in "${mounts[@]}"; do
		is_mounted "$m" || continue
		# the daemon must be gone before the mount below it goes
		p=$(mount_daemon_pid "$m")
		unmount_busy_retry "$m" || fail "unmount of $m"
		if [ -n "$p" ] && ! wait_gone "$p" 100; then
			fail "the daemon of $m (pid $p) did not exit after unmount"
		fi
	done
	for p in $(seq 100); do
		pgrep -f "$(pf_daemons_re)" >/dev/null || return 0
		sleep 0.1
	done
	fail "a prefetchfs daemon did not exit after unmount"
}

# pf_mount_ready SRC MNT [options...]: prefetchfs -f in the background (not
# a job of this shell, which cleanup kills first), its output in the daemon
# log $WORK/daemon.MNT.log (checked at the end); returns once the mount
# answers (its stats file is readable, so INIT was answered), 1 with the
# log printed if it fails (at once if the daemon exits).
pf_mount_ready() {
	local src=$1 mnt=$2 i pid
	shift 2
	mkdir -p "$mnt"
	local log="$WORK/daemon.$(basename "$mnt").log"
	track_mount "$mnt"
	DAEMON_LOGS+=("$log")
	("$PF" -f "$@" "$src" "$mnt" </dev/null >"$log" 2>&1 &
	 echo $! >"$WORK/pid.$(basename "$mnt")")
	pid=$(cat "$WORK/pid.$(basename "$mnt")")
	track_pid "$pid"
	for ((i = 0; i < 300; i++)); do
		mountpoint -q "$mnt" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! mountpoint -q "$mnt"; then
		echo "mount of $src on $mnt failed:"
		cat "$log"
		return 1
	fi
	for ((i = 0; i < 200; i++)); do
		[ -r "$mnt/.prefetchfs/stats" ] && return 0
		sleep 0.05
	done
	echo "$mnt: no stats file"
	return 1
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
	track_mount "$mnt"
	DAEMON_LOGS+=("$log")
	"$PF" "$@" "$src" "$mnt" >"$log" 2>&1
	local rc=$?
	if [ $rc -ne 0 ] || ! mountpoint -q "$mnt"; then
		echo "mount of $src on $mnt failed (exit $rc):"
		cat "$log"
		return 1
	fi
	local pid
	pid=$(pf_pid "$mnt")
	[ -n "$pid" ] && track_pid "$pid"
	return 0
}

# pf_umount MNT: unmount and wait (up to 10 s) for the daemon to exit.
pf_umount() {
	local p rc
	is_mounted "$1" || return 0
	p=$(mount_daemon_pid "$1")
	fusermount3 -u "$1"
	rc=$?
	[ $rc -eq 0 ] && [ -n "$p" ] && wait_gone "$p" 100
	return $rc
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
	# (the logs of mounts made in subshells too)
	for l in $(printf '%s\n' "${DAEMON_LOGS[@]}" "$WORK"/daemon.*.log | sort -u); do
		[ -f "$l" ] || continue
		if grep -qE 'AddressSanitizer|UndefinedBehaviorSanitizer|runtime error:|LeakSanitizer' "$l"; then
			fail "sanitizer report in $l"
			cat "$l"
		fi
	done
}

# all_same MNT: every file of $SRC reads the same through MNT (the first
# that differs is named)
all_same() {
	local f
	for f in $(cd "$SRC" && find . -type f | sort); do
		if ! cmp -s "$SRC/$f" "$1/$f"; then
			echo "differs: $f"
			return 1
		fi
	done
	return 0
}

stats_json() { cat "$1/.prefetchfs/stats"; }

# json_get FILE-or-STRING PYTHON-EXPR: evaluate EXPR on the parsed stats as `s`
json_eval() {
	python3 -c 'import json,sys; s=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1"
}

# The stats as Python sees them, for stats_eval and stats_check: SRC is a
# mount point (its .prefetchfs/stats), a file holding the stats JSON, or -
# (stdin).  EXPR is a Python expression over
#   s            the stats (strict UTF-8 JSON, else an error)
#   t, tr, c     s["totals"], s["transport"], s["transport"]["disk_cache"]
#                (None where absent)
#   sc           s["transport"]["shared_cache"] (None where absent)
#   streams(prefix="", suffix="")  the streams whose file starts with
#                prefix and ends with suffix
#   stream(suffix)  the one of those with the most reads, or None
STATS_PY='
import json, os, sys
mode, src, expr = sys.argv[1:4]
if src == "-":
    raw = sys.stdin.buffer.read()
else:
    path = os.path.join(src, ".prefetchfs/stats") if os.path.isdir(src) else src
    raw = open(path, "rb").read()
try:
    s = json.loads(raw.decode("utf-8"))
except ValueError as e:
    sys.exit("  stats of %s: not valid JSON: %s" % (src, e))
def part(d, k):
    return d.get(k) if isinstance(d, dict) else None
t = part(s, "totals")
tr = part(s, "transport")
c = part(tr, "disk_cache")
sc = part(tr, "shared_cache")
def streams(prefix="", suffix=""):
    return [x for x in part(s, "streams") or []
            if x["file"].startswith(prefix) and x["file"].endswith(suffix)]
def stream(suffix):
    mine = streams(suffix=suffix)
    return max(mine, key=lambda x: x["reads"]) if mine else None
env = dict(s=s, t=t, tr=tr, c=c, sc=sc, streams=streams, stream=stream)
try:
    v = eval(expr, env)
except Exception as e:
    v, err = None, "%s: %s" % (type(e).__name__, e)
else:
    err = None
if mode == "eval" and err is None:
    print(v)
    sys.exit(0)
if mode == "check" and err is None and v:
    sys.exit(0)
print("  expression:", expr)
print("  " + (err or "value: %r" % (v,)))
names = compile(expr, "expr", "eval").co_names
for k in ("t", "tr", "c", "sc"):
    if k in names:
        print("  %s: %s" % (k, json.dumps(env[k])))
for k, v in (s.items() if isinstance(s, dict) else ()):
    if k not in ("totals", "transport", "streams") and "\"%s\"" % k in expr:
        print("  s[%r]: %s" % (k, json.dumps(v)[:2000]))
if "s" in names or "streams" in names or "stream" in names:
    print("  streams: %s" % [(x.get("file"), x.get("pattern"), x.get("reads"))
                              for x in part(s, "streams") or []][:20])
sys.exit(1)
'

# stats_eval SRC EXPR: print EXPR's value over the stats of SRC (above)
stats_eval() { python3 -c "$STATS_PY" eval "$1" "$2"; }

# stats_wait SRC EXPR SHOW: EXPR over the stats of SRC (stats_eval) comes
# true within 10 s; else SHOW's value is printed and it returns 1
stats_wait() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(stats_eval "$1" "$2")" = True ] && return 0
		sleep 0.1
	done
	echo "$3: $(stats_eval "$1" "$3")"
	return 1
}

# wait_cached MNT BYTES: the disk cache holds BYTES (10 s at most)
wait_cached() { stats_wait "$1" "c['bytes_cached'] >= $2" c; }

# stats_check "what" SRC EXPR: a check that EXPR is true over the stats of
# SRC (above); on failure it prints the expression, its value and the
# values of the names it uses
stats_check() {
	local out
	if out=$(python3 -c "$STATS_PY" check "$2" "$3" 2>&1); then
		ok "$1"
	else
		fail "$1"
		echo "$out"
	fi
}

# mkfile PATH SIZE_BYTES: deterministic incompressible content
mkfile() {
	head -c "$2" <(openssl enc -aes-128-ctr -pass pass:"$1" -nosalt -pbkdf2 </dev/zero 2>/dev/null) >"$1"
}

same() { cmp -s "$1" "$2"; }

# ---- more for the mount tests --------------------------------------------

SLOWFS="$TOP/bench/slowfs"
TRAINER="$TOP/bench/trainer"
MKDATA="$TOP/bench/mkdata"

# The binaries a test runs must exist: a missing one is a failure (the
# build is broken), never a skip.
need_tools() {
	local t
	for t in "$PF" "$@"; do
		if [ ! -x "$t" ]; then
			echo "FAIL: $t is missing: run make prefetchfs tests bench"
			exit 1
		fi
	done
}

# Extended regular expression matching the string $1 literally.
re_quote() {
	printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'
}

# daemon_pid BINARY MNT: pid of the daemon BINARY serving MNT (its command
# line ends with MNT), empty if none.
daemon_pid() {
	pgrep -o -f -x -- "$(re_quote "$1")( .*)? $(re_quote "$2")"
}

pf_pid() { daemon_pid "$PF" "$1"; }

# Regular expression for the command lines of this test's prefetchfs
# daemons (the binary first, so that no helper or shell matches).
pf_daemons_re() {
	printf '^%s .*%s' "$(re_quote "$PF")" "$(re_quote "$WORK")"
}

# The prefetchfs or slowfs daemon serving MNT.
mount_daemon_pid() {
	pgrep -o -f -x -- "($(re_quote "$PF")|$(re_quote "$SLOWFS"))( .*)? $(re_quote "$1")"
}

# ours PID: PID is still a process of this test (its command line names
# $WORK), not another one that got the number since
ours() {
	tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$WORK"
}

# exited PID: PID has exited.  A zombie has: a daemon (or server) is
# reparented to init, and an init that reaps late (seconds in some
# containers, never where PID 1 is a plain program) must not make every
# unmount wait for it.
exited() {
	local st
	kill -0 "$1" 2>/dev/null || return 0
	read -r st <"/proc/$1/stat" 2>/dev/null || return 0
	st=${st##*) }
	[ "${st%% *}" = Z ]
}

# past_mtime FILE...: wait until the clock is in a later second than the
# mtime of each FILE, so that a file written next gets a newer mtime even
# where times have whole seconds (ext3, HTTP dates): no longer than needed,
# unlike a sleep of a second.  (20 ms past the second: file times come
# from a coarse clock.)
past_mtime() {
	local f t m=0
	for f in "$@"; do
		t=$(stat -c %Y "$f") || return 1
		[ "$t" -gt "$m" ] && m=$t
	done
	while [ "$(date +%s%N)" -lt $(((m + 1) * 1000000000 + 20000000)) ]; do
		sleep 0.05
	done
}

# wait_gone PID TENTHS: true once PID has exited (waits TENTHS x 0.1 s).
wait_gone() {
	local i
	for ((i = 0; i < $2; i++)); do
		exited "$1" && return 0
		sleep 0.1
	done
	exited "$1"
}

# slowfs_mount SRC MNT [slowfs options...]: bench/slowfs as a slow source;
# unmounted at exit after every mount made on top of it.
slowfs_mount() {
	local src=$1 mnt=$2 pid
	shift 2
	mkdir -p "$mnt"
	track_mount "$mnt"
	local log="$WORK/slowfs.$(basename "$mnt").log"
	if ! "$SLOWFS" "$@" "$src" "$mnt" >"$log" 2>&1 || ! mountpoint -q "$mnt"; then
		echo "slowfs mount of $src on $mnt failed:"
		cat "$log"
		return 1
	fi
	pid=$(daemon_pid "$SLOWFS" "$mnt")
	[ -n "$pid" ] && track_pid "$pid"
	return 0
}

rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

# The daemon was built with a sanitizer (its memory use is not comparable).
sanitized() {
	ldd "$PF" 2>/dev/null | grep -qE 'lib(asan|ubsan|tsan)'
}

# hwm_kb PID: the process's peak RSS (VmHWM) in KiB.
hwm_kb() {
	awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

# check_peak_rss PID HWM0 MIB: the daemon's peak RSS grew by at most MIB
# (its max_memory) since HWM0 (hwm_kb before the reads); not compared in a
# sanitizer build.
check_peak_rss() {
	local hwm
	hwm=$(hwm_kb "$1")
	echo "daemon peak RSS: $2 KiB before the reads, ${hwm} KiB after"
	if sanitized; then
		ok "peak RSS not compared: a sanitizer build"
	else
		check "peak RSS within max_memory ($3 MiB) of the daemon's before the reads" \
			[ "${hwm:-999999999}" -le $(($2 + $3 * 1024)) ]
	fi
}

# one_line_err FILE: FILE is exactly one line starting "prefetchfs: ".
one_line_err() {
	[ "$(wc -l <"$1")" -eq 1 ] && head -1 "$1" | grep -q '^prefetchfs: '
}

# quiet COMMAND...: run it with its output discarded (for check lines)
quiet() { "$@" >/dev/null 2>&1; }

# kill_daemon MNT: the daemon of MNT hangs: SIGKILL it (which aborts its
# FUSE connection: readers blocked on it get ENOTCONN) and unmount MNT.
kill_daemon() {
	local p
	p=$(mount_daemon_pid "$1")
	if [ -n "$p" ]; then
		kill -9 "$p" 2>/dev/null
		wait_gone "$p" 50
	fi
	fusermount3 -u "$1" 2>/dev/null || fusermount3 -uz "$1" 2>/dev/null
}

# guard MNT SECS COMMAND...: run COMMAND, return its status.  If it is still
# running after SECS seconds it is taken to hang on the daemon: print so,
# kill the daemon of MNT (so that COMMAND can end), and return 124.  The
# command runs in the background so that the test's traps still work while
# it is blocked.
guard() {
	local mnt=$1 secs=$2 pid i
	shift 2
	"$@" <&0 &	# (<&0: keep stdin, not /dev/null as for other "&")
	pid=$!
	for ((i = 0; i < secs * 20; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			return
		fi
		sleep 0.05
	done
	echo "HANG: still running after ${secs}s: $*"
	echo "HANG: the daemon of $mnt: $(ps -o pid=,stat=,pcpu= -p "$(mount_daemon_pid "$mnt")" 2>/dev/null) (pid state %cpu)"
	# what the daemon does meanwhile: its totals one second apart
	for i in 1 2; do
		echo "HANG: totals: $(timeout -s KILL 2 grep -o '"reads": [0-9]*.*"fetches": [0-9]*' "$mnt/.prefetchfs/stats" 2>/dev/null)"
		[ $i -eq 1 ] && sleep 1
	done
	echo "HANG: killing the daemon"
	kill_daemon "$mnt"
	kill "$pid" 2>/dev/null
	wait_gone "$pid" 50 || kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 124
}

# drop_page_cache FILE...: evict the files' pages from the kernel's page
# cache (POSIX_FADV_DONTNEED), so that the next reads of them reach the
# daemon even though it lets the kernel keep a file's pages across opens
drop_page_cache() {
	python3 -c '
import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)' "$@"
}
