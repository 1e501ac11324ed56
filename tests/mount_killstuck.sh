#!/bin/bash
# A daemon killed with SIGKILL while one of its threads waits in the kernel
# (src/guard.c): its readers must get an error, not wait for ever.
#
# The source is bench/slowfs with 3 s per READ and direct_io (each read()
# of it one READ that the reader waits for); a reader's read of the
# prefetchfs mount becomes a backend read of slowfs, which slowfs takes and
# then sits on; slowfs is stopped (SIGSTOP) in that time, so the backend
# thread's read can end only when slowfs is continued, and the FUSE
# request it waits for has been taken: SIGKILL cannot end that wait.  The
# daemon is killed.  Without the guard the process stays (a zombie with
# that thread), keeps its /dev/fuse descriptor, and the reader waits for
# ever; with it, the guard aborts the connection a few seconds after the
# main thread died, and the reader gets an error.  For both backends'
# ways of reading a directory: io_uring and pread threads.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools

SRC=$WORK/src
mkdir -p "$SRC"
mkfile "$SRC/a.bin" $((4 << 20))

for io in io_uring pread; do
	S=$WORK/slow-$io
	M=$WORK/mnt-$io
	slowfs_mount "$SRC" "$S" -o latency_ms=3000,direct_io || { fail "slowfs ($io)"; continue; }
	spid=$(daemon_pid "$SLOWFS" "$S")
	pf_mount "$S" "$M" -o "io=$io,prefetch=off" || { fail "mount ($io)"; continue; }
	pid=$(pf_pid "$M")
	gpid=$(pgrep -P "$pid" -x pf-guard)
	check "$io: the daemon has its guard" [ -n "$gpid" ]
	# the reader: its one READ waits for slowfs
	(dd if="$M/a.bin" of=/dev/null bs=64K count=1 2>"$WORK/dd.$io.err"; echo $? >"$WORK/dd.$io.rc") &
	reader=$!
	sleep 1	# the backend's read of slowfs is taken and waits
	kill -STOP "$spid"
	kill -9 "$pid"
	t0=$(date +%s%N)
	for ((i = 0; i < 150; i++)); do
		[ -f "$WORK/dd.$io.rc" ] && break
		sleep 0.1
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	check "$io: the reader of the killed daemon got an answer (${ms} ms)" [ -f "$WORK/dd.$io.rc" ]
	check "$io: ... an error, not data ($(cat "$WORK/dd.$io.rc" 2>/dev/null): $(head -c 80 "$WORK/dd.$io.err" 2>/dev/null))" \
		eval '[ -f "$WORK/dd.$io.rc" ] && [ "$(cat "$WORK/dd.$io.rc")" != 0 ]'
	# let the stuck thread end, and everything go
	kill -CONT "$spid"
	wait "$reader" 2>/dev/null
	check "$io: the daemon is gone once slowfs answers" wait_gone "$pid" 100
	fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" 2>/dev/null
	check "$io: the guard is gone too" wait_gone "${gpid:-0}" 100
done

finish
