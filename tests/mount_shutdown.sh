#!/bin/bash
# Shutdown with reads in flight, over a slow source (bench/slowfs): the
# daemon must exit within a few seconds, every reader must end with the
# right bytes or an error (never other bytes, never a hang), and there is
# no sanitizer report.
#  - SIGTERM to a foreground daemon (-f): exits 0 and says so;
#  - SIGTERM to a background daemon, with the stats file, the plan file,
#    a dataset file and a directory held open (what their handles hold is
#    freed);
#  - fusermount3 -u while files are open: refused (busy), the readers read
#    on; then fusermount3 -u -z: the readers finish, and the daemon exits
#    once the last file is closed.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$SLOWFS" "$MKDATA"

DATA=$WORK/data
SLOW=$WORK/slow
NREAD=4
"$MKDATA" "$DATA" $NREAD 48M >/dev/null 2>&1 || fail "bench/mkdata"
# about 30 ms per 128 KiB READ: a file takes seconds to read
slowfs_mount "$DATA" "$SLOW" -o latency_ms=20,bw_mib=20 || { fail "slowfs mount"; finish; }

# start_readers MNT: $NREAD readers, each comparing one whole file with the
# source (cmp: 0 same, 1 different bytes, 2 a read error); each is bounded
# by 60 s so that a hang shows as exit 124
start_readers() {
	local i
	READERS=()
	for ((i = 0; i < NREAD; i++)); do
		f=$(printf 'file-%06d.bin' $i)
		timeout -k 5 60 cmp "$DATA/$f" "$1/$f" >"$WORK/reader.$i" 2>&1 &
		READERS+=($!)
	done
}

# in_flight MNT: true once the daemon has fetches in flight
in_flight() {
	local i n
	for ((i = 0; i < 100; i++)); do
		n=$(timeout 5 cat "$1/.prefetchfs/stats" 2>/dev/null |
			stats_eval - 't["inflight"]' 2>/dev/null)
		[ -n "$n" ] && [ "$n" -gt 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# readers_end WHAT SECS: every reader ends within SECS seconds, with the
# file's bytes or an error, never other bytes
readers_end() {
	local what=$1 secs=$2 i p rc got=0 err=0 bad=0 hung=0
	for ((i = 0; i < secs * 10; i++)); do
		local alive=0
		for p in "${READERS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive -eq 0 ] && break
		sleep 0.1
	done
	for i in "${!READERS[@]}"; do
		p=${READERS[i]}
		if kill -0 "$p" 2>/dev/null; then
			hung=$((hung + 1))
			kill -9 "$p" 2>/dev/null
		fi
		wait "$p"
		rc=$?
		case $rc in
		0) got=$((got + 1)) ;;
		2) err=$((err + 1)) ;;
		*)
			bad=$((bad + 1))
			echo "  reader $i: exit $rc: $(cat "$WORK/reader.$i")"
			;;
		esac
	done
	check "$what: no reader hangs (still running after ${secs}s: $hung)" test $hung -eq 0
	check "$what: readers got the file ($got) or an error ($err), never other bytes ($bad)" test $bad -eq 0
	echo "  ($what: $got complete, $err with a read error: $(cat "$WORK"/reader.* | sort -u | head -2 | tr '\n' ' '))"
}

# ---- SIGTERM to a foreground daemon ------------------------------------------------
M=$WORK/mnt-fg
mkdir -p "$M"
MOUNTS+=("$M")
DAEMON_LOGS+=("$WORK/fg.log")
"$PF" -f "$SLOW" "$M" >"$WORK/fg.log" 2>&1 &
fgpid=$!
DAEMON_PIDS+=("$fgpid")
for ((i = 0; i < 100; i++)); do mountpoint -q "$M" && break; sleep 0.1; done
if mountpoint -q "$M"; then
	start_readers "$M"
	check "-f: reads in flight" in_flight "$M"
	start=$(date +%s%N)
	kill -TERM "$fgpid"
	if wait_gone "$fgpid" 50; then
		ok "-f: the daemon exits on SIGTERM within 5 s ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
		wait "$fgpid"
		rc=$?
		check "-f: exit status 0 (got $rc)" test $rc -eq 0
	else
		fail "-f: the daemon still runs 5 s after SIGTERM"
	fi
	readers_end "-f SIGTERM" 10
	check "-f: the mount is gone" bash -c '! mountpoint -q "$1"' _ "$M"
	check "-f: the log names the signal" grep -q "^prefetchfs: signal 15: unmounting" "$WORK/fg.log"
	check "-f: the log says it unmounts" grep -q "unmounting $M" "$WORK/fg.log"
	check "-f: no error in the log" bash -c '! grep -vE "^prefetchfs: (mounted|unmounting|signal [0-9]+: unmounting)" "$1" | grep -q .' _ "$WORK/fg.log"
	cat "$WORK/fg.log"
else
	fail "-f: mount of $SLOW on $M"
	cat "$WORK/fg.log"
fi

# ---- SIGTERM to a background daemon --------------------------------------------------
M=$WORK/mnt-bg
if pf_mount "$SLOW" "$M"; then
	pid=$(pf_pid "$M")
	start_readers "$M"
	check "background: reads in flight" in_flight "$M"
	# handles the kernel never releases: the stats file, the plan file,
	# a dataset file and a directory held open across the SIGTERM (under
	# the sanitizers what they hold must be freed all the same)
	HOLD=()
	sleep 60 <"$M/.prefetchfs/stats" &
	HOLD+=($!)
	sleep 60 >"$M/.prefetchfs/plan" &
	HOLD+=($!)
	sleep 60 <"$M/file-000001.bin" &
	HOLD+=($!)
	sleep 60 <"$M" &
	HOLD+=($!)
	sleep 0.2
	check "background: four handles held" kill -0 "${HOLD[@]}"
	start=$(date +%s%N)
	kill -TERM "$pid"
	if wait_gone "$pid" 50; then
		ok "background: the daemon exits on SIGTERM within 5 s ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
	else
		fail "background: the daemon still runs 5 s after SIGTERM"
	fi
	kill "${HOLD[@]}" 2>/dev/null
	wait "${HOLD[@]}" 2>/dev/null
	readers_end "background SIGTERM" 10
	check "background: the mount is gone" bash -c '! mountpoint -q "$1"' _ "$M"
else
	fail "background: mount"
fi

# ---- fusermount3 -u, then -u -z, while files are open and read ----------------------
M=$WORK/mnt-umount
if pf_mount "$SLOW" "$M"; then
	pid=$(pf_pid "$M")
	start_readers "$M"
	check "unmount: reads in flight" in_flight "$M"
	if fusermount3 -u "$M" 2>"$WORK/umount.err"; then
		ok "fusermount3 -u with open files: unmounted"
	else
		ok "fusermount3 -u with open files: refused: $(cat "$WORK/umount.err")"
		check "fusermount3 -u refused: the mount still works" \
			guard "$M" 20 cmp -s "$DATA/file-000000.bin" "$M/file-000000.bin"
		check "fusermount3 -u -z: detached" fusermount3 -u -z "$M"
	fi
	readers_end "unmount" 60
	if wait_gone "$pid" 50; then
		ok "unmount: the daemon exits within 5 s of the last reader"
	else
		fail "unmount: the daemon still runs 5 s after the last reader ended"
	fi
	check "unmount: the mount is gone" bash -c '! mountpoint -q "$1"' _ "$M"
else
	fail "unmount: mount"
fi

finish
