#!/bin/bash
# demo/demo.sh (what `make demo` runs) with a tiny dataset: it exits 0
# after printing its two tables (the shards; the shuffled PyTorch trainer
# over a file tree, with its byte check), and leaves nothing behind (its
# working directory /tmp/pftest.*, a mount, a daemon or a server); Ctrl-C
# in the middle of a trainer run and a step that fails, in either part,
# also leave nothing behind and say which step ended the demo.  The demo
# mounts inside $(...) subshells: its cleanup must find those mounts too.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$TOP/bench/delayproxy" "$MKDATA"
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	fail "/usr/bin/python3 cannot import torch (tests/deps.sh installs python3-torch)"
	finish
fi

DEMO="$TOP/demo/demo.sh"
# 2 shards of 4 MiB and a tree of 40 files behind a fast "object store":
# a few seconds and four PyTorch start-ups
TINY=(--shards 2 --shard-size 4M --latency-ms 5 --bw 512M --batch 1M --compute-ms 1
	--tree-files 40 --tree-compute-ms 1)

# demo_work OUT: the demo's working directory, from its "== dataset" line
demo_work() {
	sed -n 's|^== dataset: .* in \(/tmp/pftest\.[A-Za-z0-9]*\)/www$|\1|p' "$1" 2>/dev/null | head -1
}

# left_behind DIR: what the demo run that used DIR left: the directory,
# a mount below it, a process naming it (daemon, nginx, delayproxy)
left_behind() {
	local d=$1 i
	# servers stop within a second or two of the demo's exit
	for ((i = 0; i < 30; i++)); do
		[ ! -e "$d" ] && ! grep -qF " $d/" /proc/self/mountinfo &&
			! pgrep -f -- "$d" >/dev/null && return 1
		sleep 0.1
	done
	[ -e "$d" ] && echo "left: $d"
	grep -F " $d/" /proc/self/mountinfo | sed 's/^/left mounted: /'
	pgrep -af -- "$d" | sed 's/^/left running: /'
	return 0
}
nothing_left() { ! left_behind "$1"; }

# --- 1. a whole run, twice -------------------------------------------------
for run in 1 2; do
	out=$WORK/run$run.out
	timeout -k 10 150 "$DEMO" "${TINY[@]}" >"$out" 2>&1
	rc=$?
	d=$(demo_work "$out")
	check "run $run: exit 0" test "$rc" -eq 0
	check "run $run: the table has both rows with numbers" \
		grep -Eq '^prefetchfs -o prefetch=off +[0-9.]+ +[0-9]+ +[0-9.]+$' "$out"
	check "run $run: prefetchfs row" \
		grep -Eq '^prefetchfs +[0-9.]+ +[0-9]+ +[0-9.]+$' "$out"
	check "run $run: what prefetchfs learned" \
		grep -q '^  file-000001.bin ' "$out"
	check "run $run: the tree's table, 7 rows with numbers and bytes ok" \
		bash -c '[ "$(grep -Ec "^(local copy|prefetchfs|prefetchfs -o cache_dir|prefetchfs -o cache_dir, mounted again) +[123] +[0-9.]+ +[0-9.]+ +ok$" "$1")" -eq 7 ]' _ "$out"
	check "run $run: the epoch after mounting the cache_dir again" \
		grep -Eq '^prefetchfs -o cache_dir, mounted again +3 +[0-9.]+ +[0-9.]+ +ok$' "$out"
	check "run $run: its working directory is named" test -n "$d"
	[ -n "$d" ] && check "run $run: nothing left behind" nothing_left "$d"
	[ "$rc" -eq 0 ] || cat "$out"
done

# --- 2. a step fails after a mount: the trainer ----------------------------
out=$WORK/fail.out
timeout -k 10 120 "$DEMO" "${TINY[@]}" --batch 1X >"$out" 2>&1
rc=$?
d=$(demo_work "$out")
check "failing trainer: non-zero exit ($rc)" test "$rc" -ne 0 -a "$rc" -ne 124
check "failing trainer: the last line names the step" \
	bash -c 'tail -1 "$1" | grep -q "^demo/demo.sh: failed while running the trainer on .*/off "' _ "$out"
check "failing trainer: no table" bash -c '! grep -q "^reading the dataset" "$1"' _ "$out"
[ -n "$d" ] && check "failing trainer: nothing left behind" nothing_left "$d"

# --- 2b. a step of the second part fails: its trainer, after nginx and
# delayproxy (a second pair) started
out=$WORK/fail2.out
timeout -k 10 150 "$DEMO" "${TINY[@]}" --tree-compute-ms -1 >"$out" 2>&1
rc=$?
d=$(demo_work "$out")
check "failing tree trainer: non-zero exit ($rc)" test "$rc" -ne 0 -a "$rc" -ne 124
check "failing tree trainer: the first table came" grep -q '^reading the dataset' "$out"
check "failing tree trainer: the last line names the step" \
	bash -c 'tail -1 "$1" | grep -q "^demo/demo.sh: failed while running examples/folder_loader.py on .*/tree (local copy) "' _ "$out"
check "failing tree trainer: no second table" bash -c '! grep -q "^shuffled file tree" "$1"' _ "$out"
[ -n "$d" ] && check "failing tree trainer: nothing left behind" nothing_left "$d"

# --- 3. Ctrl-C while the trainer reads through a mount ---------------------
# (in a session of its own, so that SIGINT goes to the demo's process group
# as the terminal's Ctrl-C does, and with SIGINT at its default: a shell
# starts "&" commands with it ignored; 5 s of compute per batch, so that
# the trainer is surely still running when SIGINT comes, however busy the
# machine)
# ctrl_c NAME STEP MNT DEMO-ARGS...: run the demo, Ctrl-C once its step
# file starts with STEP and the mount MNT (below its working directory) is
# up, then check what it did
ctrl_c() {
	local name=$1 step=$2 mnt=$3 out=$WORK/int.$1.out dpid d="" i rc
	shift 3
	python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execv(sys.argv[1], sys.argv[1:])' "$DEMO" "$@" >"$out" 2>&1 &
	dpid=$!
	# (the 2 minutes: the tree part comes after the first table and
	# three PyTorch start-ups, slow on a busy machine)
	for ((i = 0; i < 1200; i++)); do
		[ -z "$d" ] && d=$(demo_work "$out")
		[ -n "$d" ] && grep -q "^$step" "$d/step" 2>/dev/null &&
			grep -qF " $d/$mnt " /proc/self/mountinfo && break
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	check "Ctrl-C ($name): the demo is at step '$step'" grep -q "^$step" "$d/step"
	check "Ctrl-C ($name): its mount (made in a subshell) is up" \
		grep -qF " $d/$mnt " /proc/self/mountinfo
	kill -INT -- "-$dpid" 2>/dev/null
	for ((i = 0; i < 300; i++)); do
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$dpid" 2>/dev/null; then
		fail "Ctrl-C ($name): the demo still runs 30 s later"
		kill -TERM -- "-$dpid" 2>/dev/null
	fi
	wait "$dpid"
	rc=$?
	check "Ctrl-C ($name): exit 130 ($rc)" test "$rc" -eq 130
	check "Ctrl-C ($name): says so, naming the step" \
		bash -c 'tail -1 "$1" | grep -q "^demo/demo.sh: interrupted while $2"' _ "$out" "$step"
	[ -n "$d" ] && check "Ctrl-C ($name): nothing left behind" nothing_left "$d"
}
ctrl_c shards "running the trainer on .*/off " off "${TINY[@]}" --compute-ms 5000
# --- 3b. Ctrl-C while the PyTorch trainer (and its 4 workers) reads
# through the cache_dir mount of the second part
ctrl_c tree "running examples/folder_loader.py on .*/tree-disk " tree-disk \
	"${TINY[@]}" --tree-compute-ms 2000

finish
