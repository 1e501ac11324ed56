#!/bin/bash
# bench/demo.sh (what `make demo` runs) with a tiny dataset: it exits 0
# after printing its table, and leaves nothing behind (its working
# directory /tmp/pftest.*, a mount, a daemon or a server); Ctrl-C in the
# middle of a trainer run and a step that fails also leave nothing behind
# and say which step ended the demo.  The demo mounts inside $(...)
# subshells: its cleanup must find those mounts too.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$TOP/bench/delayproxy" "$MKDATA"

DEMO="$TOP/bench/demo.sh"
# 2 shards of 4 MiB behind a fast "object store": a few seconds
TINY=(--shards 2 --shard-size 4M --latency-ms 5 --bw 512M --batch 1M --compute-ms 1)

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
	timeout -k 10 120 "$DEMO" "${TINY[@]}" >"$out" 2>&1
	rc=$?
	d=$(demo_work "$out")
	check "run $run: exit 0" test "$rc" -eq 0
	check "run $run: the table has both rows with numbers" \
		grep -Eq '^prefetchfs -o prefetch=off +[0-9.]+ +[0-9]+ +[0-9.]+$' "$out"
	check "run $run: prefetchfs row" \
		grep -Eq '^prefetchfs +[0-9.]+ +[0-9]+ +[0-9.]+$' "$out"
	check "run $run: what prefetchfs learned" \
		grep -q '^  file-000001.bin ' "$out"
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
	bash -c 'tail -1 "$1" | grep -q "^bench/demo.sh: failed while running the trainer on .*/off "' _ "$out"
check "failing trainer: no table" bash -c '! grep -q "^reading the dataset" "$1"' _ "$out"
[ -n "$d" ] && check "failing trainer: nothing left behind" nothing_left "$d"

# --- 3. Ctrl-C while the trainer reads through a mount ---------------------
# (in a session of its own, so that SIGINT goes to the demo's process group
# as the terminal's Ctrl-C does, and with SIGINT at its default: a shell
# starts "&" commands with it ignored; 5 s of compute per batch, so that
# the trainer is surely still running when SIGINT comes, however busy the
# machine)
out=$WORK/int.out
python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execv(sys.argv[1], sys.argv[1:])' "$DEMO" "${TINY[@]}" --compute-ms 5000 >"$out" 2>&1 &
dpid=$!
d=""
for ((i = 0; i < 600; i++)); do
	[ -z "$d" ] && d=$(demo_work "$out")
	[ -n "$d" ] && grep -q '^running the trainer on .*/off ' "$d/step" 2>/dev/null && break
	kill -0 "$dpid" 2>/dev/null || break
	sleep 0.1
done
check "Ctrl-C: the demo is running the trainer" \
	grep -q '^running the trainer on .*/off ' "$d/step"
check "Ctrl-C: its mount (made in a subshell) is up" \
	grep -qF " $d/off " /proc/self/mountinfo
kill -INT -- "-$dpid" 2>/dev/null
for ((i = 0; i < 300; i++)); do
	kill -0 "$dpid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$dpid" 2>/dev/null; then
	fail "Ctrl-C: the demo still runs 30 s later"
	kill -TERM -- "-$dpid" 2>/dev/null
fi
wait "$dpid"
rc=$?
check "Ctrl-C: exit 130 ($rc)" test "$rc" -eq 130
check "Ctrl-C: says so, naming the step" \
	bash -c 'tail -1 "$1" | grep -q "^bench/demo.sh: interrupted while running the trainer on .*/off "' _ "$out"
[ -n "$d" ] && check "Ctrl-C: nothing left behind" nothing_left "$d"

finish
