#!/bin/bash
# The cache stays within max_memory: 8 concurrent sequential readers of 8
# files of 64 MiB (512 MiB in all) through a mount with max_memory=64M.
# The source is bench/slowfs.  The daemon's resident set (VmRSS, sampled every 50 ms, and the kernel's
# own high-water mark VmHWM) must stay under 64 MiB plus an allowance for
# code, libraries, FUSE buffers, thread stacks and metadata; the stats
# must report memory_used <= memory_max <= 64 MiB; every byte read must be
# right.
# Then memory follows read-ahead, not bytes read: one sequential reader of
# a 512 MiB file with max_memory=256M and max_window=16M (the planner's
# windows follow the batches it sees, which a loaded machine makes long).
# Blocks go back to the pool once the reader passed them, so the daemon's
# VmHWM stays under half the budget plus the allowance (windows of 16 MiB,
# at most a quarter of the budget deep, the pusher's queue at 32 fetches;
# before, the pool mapped the whole budget and kept it), what is held at
# the end is the re-read share at most, the stats' parts add up, and a
# second read of the file is served by the page cache (keep_cache) without
# the daemon fetching it again.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$MKDATA" "$SLOWFS"

MiB=1048576
BUDGET_MIB=64
ALLOW_MIB=48	# code, libraries, FUSE request buffers, stacks, metadata
if sanitized; then
	# ASAN/UBSAN: shadow memory, redzones, quarantine, runtime
	ALLOW_MIB=$((ALLOW_MIB + 96))
	echo "  (sanitizer build: allowance raised by 96 MiB)"
fi

SRC=$WORK/src
SLOW=$WORK/slow
M=$WORK/mnt
"$MKDATA" "$SRC" 8 64M >/dev/null 2>&1 || fail "bench/mkdata"
# a slow source (2 ms + 50 MiB/s per READ) so that the run lasts a few
# seconds and read-ahead competes with the readers for the budget
slowfs_mount "$SRC" "$SLOW" -o latency_ms=2,bw_mib=50 || { fail "slowfs mount"; finish; }
pf_mount "$SLOW" "$M" -o max_memory=${BUDGET_MIB}M || { fail "mount"; finish; }
PID=$(pf_pid "$M")
if [ -z "$PID" ]; then
	fail "find the daemon's pid"
	finish
fi
ok "mounted with max_memory=${BUDGET_MIB}M (daemon pid $PID, RSS $(rss_kb "$PID") KiB at start)"

# sampler: VmRSS every 50 ms, the stats' memory_used every 4th time
sampler() {
	local n=0 m
	while [ -e "$WORK/sampling" ]; do
		rss_kb "$PID" >>"$WORK/rss.samples"
		if [ $((n % 4)) -eq 0 ]; then
			m=$(sed -n 's/.*"memory_used": \([0-9]*\), "memory_max": \([0-9]*\).*/\1 \2/p' \
				"$M/.prefetchfs/stats" 2>/dev/null)
			[ -n "$m" ] && echo "$m" >>"$WORK/mem.samples"
		fi
		n=$((n + 1))
		sleep 0.05
	done
}

eight_readers() {
	local i pids=()
	for i in 0 1 2 3 4 5 6 7; do
		f=file-00000$i.bin
		( cmp "$SRC/$f" "$M/$f" >"$WORK/reader.$i" 2>&1
		  echo "rc=$?" >>"$WORK/reader.$i" ) &
		pids+=($!)
	done
	wait "${pids[@]}"
}

touch "$WORK/sampling"
sampler &
SAMPLER=$!
start=$EPOCHREALTIME
guard "$M" 120 eight_readers || fail "8 concurrent readers: HANG, daemon killed"
secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
# a last look while the daemon still holds everything it cached
cat "$M/.prefetchfs/stats" >"$WORK/stats.json" 2>/dev/null
HWM=$(awk '/^VmHWM:/ { print $2 }' "/proc/$PID/status" 2>/dev/null)
rm -f "$WORK/sampling"
wait "$SAMPLER"

for i in 0 1 2 3 4 5 6 7; do
	check "reader $i: file-00000$i.bin byte-exact" grep -qx 'rc=0' "$WORK/reader.$i"
done
echo "  (512 MiB read by 8 readers in ${secs}s)"

n=$(wc -l <"$WORK/rss.samples")
peak=$(sort -n "$WORK/rss.samples" | tail -1)
limit=$(((BUDGET_MIB + ALLOW_MIB) * 1024))
check "RSS sampled every 50 ms ($n samples)" test "$n" -ge 5
echo "  peak sampled VmRSS: $((peak / 1024)) MiB ($peak KiB); VmHWM: $((${HWM:-0} / 1024)) MiB; limit: $BUDGET_MIB MiB budget + $ALLOW_MIB MiB allowance = $((limit / 1024)) MiB"
check "peak VmRSS $((peak / 1024)) MiB <= ${BUDGET_MIB} MiB + ${ALLOW_MIB} MiB" test "$peak" -le "$limit"
check "VmHWM $((${HWM:-0} / 1024)) MiB <= ${BUDGET_MIB} MiB + ${ALLOW_MIB} MiB" test "${HWM:-0}" -gt 0 -a "${HWM:-0}" -le "$limit"

check "stats readable after the run" quiet python3 -m json.tool "$WORK/stats.json"
check "stats: memory_max <= ${BUDGET_MIB} MiB and memory_used <= memory_max" python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print("  (memory_used %d, memory_max %d)" % (t["memory_used"], t["memory_max"]))
sys.exit(0 if 0 < t["memory_max"] <= int(sys.argv[2]) and t["memory_used"] <= t["memory_max"] else 1)
' "$WORK/stats.json" $((BUDGET_MIB * MiB))
bad=$(awk '$1 > $2' "$WORK/mem.samples" | head -3)
check "stats sampled during the run: memory_used <= memory_max ($(wc -l <"$WORK/mem.samples") samples)" \
	test -z "$bad" -a -s "$WORK/mem.samples"
[ -n "$bad" ] && echo "  over budget: $bad"
check "stats: no fetch errors" python3 -c '
import json, sys
sys.exit(json.load(open(sys.argv[1]))["totals"]["fetch_errors"] != 0)' "$WORK/stats.json"

pf_umount "$M"

BIG=$WORK/big
BM=$WORK/bigmnt
"$MKDATA" "$BIG" 1 512M >/dev/null 2>&1 || fail "bench/mkdata 512M"
BF=$(cd "$BIG" && ls)
BIG_MIB=256
pf_mount "$BIG" "$BM" -o max_memory=${BIG_MIB}M,max_window=16M || { fail "mount max_memory=${BIG_MIB}M"; finish; }
PID=$(pf_pid "$BM")
[ -n "$PID" ] || { fail "find the daemon's pid"; finish; }
guard "$BM" 120 cmp "$BIG/$BF" "$BM/$BF"
check "512 MiB read sequentially, byte-exact" test $? -eq 0
HWM=$(awk '/^VmHWM:/ { print $2 }' "/proc/$PID/status" 2>/dev/null)
limit=$(((BIG_MIB / 2 + ALLOW_MIB) * 1024))
stats_json "$BM" >"$WORK/big1.json"
echo "  VmHWM after 512 MiB: $((${HWM:-0} / 1024)) MiB (limit $((limit / 1024)) MiB: half the budget of $BIG_MIB MiB + $ALLOW_MIB MiB allowance)"
check "VmHWM $((${HWM:-0} / 1024)) MiB <= $((limit / 1024)) MiB after reading 512 MiB" \
	test "${HWM:-0}" -gt 0 -a "${HWM:-0}" -le "$limit"
check "stats: memory by use adds up, at most a quarter of the budget held" python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print("  (used %d = in flight %d + ahead %d + re-read %d; mapped %d)" % (
    t["memory_used"], t["memory_inflight"], t["memory_ahead"],
    t["memory_reread"], t["memory_mapped"]))
ok = t["memory_used"] == (t["memory_inflight"] + t["memory_ahead"] +
                          t["memory_reread"])
sys.exit(0 if ok and t["memory_used"] <= t["memory_max"] // 4 else 1)
' "$WORK/big1.json"
guard "$BM" 120 cmp "$BIG/$BF" "$BM/$BF"
check "read again, byte-exact" test $? -eq 0
stats_json "$BM" >"$WORK/big2.json"
# the page cache may lose some pages on a loaded machine: at most half
check "read again from the page cache: fetched less than 256 MiB more" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["totals"]["bytes_fetched"]
b = json.load(open(sys.argv[2]))["totals"]["bytes_fetched"]
print("  (bytes_fetched %d, then %d)" % (a, b))
sys.exit(0 if b - a < (256 << 20) else 1)
' "$WORK/big1.json" "$WORK/big2.json"
pf_umount "$BM"

finish
