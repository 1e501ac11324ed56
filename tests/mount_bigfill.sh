#!/bin/bash
# tests/run: parallel
# A file bigger than memory read at random through a disk cache: a 256 MiB
# file over nginx behind bench/delayproxy (20 ms, 64 MiB/s a connection:
# the fill takes seconds, the reads meet it), -o max_memory=32M,cache_dir.  Random 4 KiB preads
# (checked byte for byte) go on until the background fill is done; then:
#  - the fill went through the disk tier (stats fill.through) and is done
#    with bytes_done == the file;
#  - nginx sent each byte of the file about once (<= 1.05 x the file: the
#    fill fetches what the tier lacks, the reader's misses are on disk,
#    and a read of a block another read is bringing in joins it);
#  - the daemon's peak RSS stayed within max_memory (plus what the daemon
#    holds with nothing read: its code, libraries, threads);
#  - the whole file read again (its page cache dropped) is exact and makes
#    no request to nginx: every byte comes from the disk tier.
# Then without cache_dir: nothing holds the file, so nothing is filled,
# the reads fetch what they ask for (bytes fetched <= 1.5 x the READs'),
# and the log says once, and prefetchfs-stat shows, what would hold it.
# Last, an mmap reader of 2 KiB windows at random offsets (nanoGPT's
# get_batch) of another file: its READs are the mount's read-ahead (the
# kernel's read-around of each page fault), which the stats' "notes" and a
# note: line of prefetchfs-stat (80 columns) say, naming readahead_kb.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools "$HELPERS/randread" "$TOP/bench/delayproxy"

SRC=$WORK/src
M=$WORK/mnt
SIZE=$((256 << 20))
mkdir -p "$SRC"
mkfile "$SRC/big.bin" "$SIZE"
mkfile "$SRC/tok.bin" $((128 << 20))

# gets / bytes: GETs of big.bin in nginx's log, and the bytes they sent
gets() { grep -c '"GET /big.bin ' "$NGINX_DIR/access.log"; }
sent() { awk '/"GET \/big.bin / { n += $10 } END { print n + 0 }' "$NGINX_DIR/access.log"; }

nginx_start "$SRC" --json >/dev/null || { fail "nginx"; finish; }
UP=${NGINX_URL#http://}
delayproxy_start "${UP%/}" 20 64M >/dev/null || { fail "delayproxy"; finish; }
pf_mount_ready "$DELAY_URL/" "$M" -o "cache_dir=$WORK/cache,max_memory=32M" ||
	{ fail "mount with cache_dir,max_memory=32M"; finish; }
pid=$(cat "$WORK/pid.$(basename "$M")")
stat "$M/big.bin" >/dev/null
hwm0=$(hwm_kb "$pid")

# ---- random 4 KiB reads until the fill is done ------------------------------
t0=$(date +%s)
for ((i = 1; i <= 600; i++)); do
	if ! "$HELPERS/randread" -s "$i" -a 4096 -m 4096 -n 20 "$M/big.bin" \
		"$SRC/big.bin" >"$WORK/rr.out" 2>&1; then
		fail "random 4 KiB reads (seed $i)"
		cat "$WORK/rr.out"
		break
	fi
	[ "$(stats_eval "$M" "s['fill']['state']")" = "done" ] && break
	[ $(($(date +%s) - t0)) -lt 45 ] || break
done
echo "fill after $(($(date +%s) - t0)) s and $i rounds of 20 reads: $(stats_eval "$M" "s['fill']")"
stats_check "the fill went through the disk tier and is done, the whole file" "$M" \
	"s['fill']['state'] == 'done' and s['fill']['through'] and s['fill']['bytes_done'] == s['fill']['bytes_total'] == $SIZE"
stats_check "the disk tier holds the file" "$M" "c['bytes_cached'] >= $SIZE"
stats_check "memory holds none of the fill (memory_ahead under 4 MiB)" "$M" "t['memory_ahead'] < 4 << 20"
echo "nginx: $(gets) GETs, $(sent) bytes of big.bin;" \
	"$(stats_eval "$M" "c['joined']") reads joined a miss in flight"
check "one fetch per byte: nginx sent at most 1.05 x the file" [ "$(sent)" -le $((SIZE + SIZE / 20)) ]
check_peak_rss "$pid" "$hwm0" 32

# ---- the whole file again: from the disk tier, no request to nginx ----------
drop_page_cache "$M/big.bin"
n0=$(gets)
check "the whole file read again is exact" cmp "$M/big.bin" "$SRC/big.bin"
n1=$(gets)
check "the whole file read again made no request to nginx ($((n1 - n0)))" [ "$n1" -eq "$n0" ]
pf_umount "$M" || fail "unmount"

# ---- without a disk cache: the advice -----------------------------------------
M=$WORK/mnt2
pf_mount_ready "$DELAY_URL/" "$M" -o "max_memory=32M" ||
	{ fail "mount with max_memory=32M"; finish; }
for ((i = 1; i <= 10; i++)); do
	"$HELPERS/randread" -s "$i" -a 4096 -m 4096 -n 20 "$M/big.bin" \
		"$SRC/big.bin" >"$WORK/rr.out" 2>&1 ||
		{ fail "random 4 KiB reads, no cache_dir (seed $i)"; cat "$WORK/rr.out"; break; }
	[ "$(stats_eval "$M" "s['fill']['state']")" = too_big ] && break
done
LOG=$WORK/daemon.$(basename "$M").log
grep 'advice:' "$LOG"
stats_check "no cache_dir: the file is too big to fill, the reads fetch what they ask (<= 1.5 x)" "$M" \
	"s['fill']['state'] == 'too_big' and t['bytes_fetched'] <= 1.5 * t['bytes_served']"
check "no cache_dir: one advice line in the log, naming cache_dir and max_memory" \
	[ "$(grep -c 'advice: random reads of big.bin (268435456 bytes) do not fit memory: add cache_dir=DIR (293.6M free needed) or max_memory=342.4M' "$LOG")" -eq 1 ]
stats_check "no cache_dir: the stats carry it" "$M" \
	"len(s['advice']) == 1 and 'cache_dir=DIR' in s['advice'][0]"
check "no cache_dir: prefetchfs-stat shows it" \
	bash -c "'$TOP/prefetchfs-stat' -n 1 '$M' | grep -q '^advice: random reads of big.bin'"

# ---- no cache_dir, an mmap reader: its READs are the read-ahead ------------
check "mmap reader of 2 KiB windows at random: every byte exact" \
	python3 - "$M/tok.bin" "$SRC/tok.bin" <<'PY'
import mmap, random, sys
f, r = open(sys.argv[1], "rb"), open(sys.argv[2], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
rnd = random.Random(29)
for i in range(64):
    off = rnd.randrange(0, len(m) - 2050)
    r.seek(off)
    if m[off:off + 2050] != r.read(2050):
        sys.exit("mismatch at %d" % off)
PY
echo "tok.bin's streams: $(stats_eval "$M" "[(x['pattern'], x['reads'], x['reads_ra'], x['read_bytes']) for x in s['streams'] if x['file'] == 'tok.bin']"), read_ahead $(stats_eval "$M" "s['read_ahead']")"
stats_check "mmap reader: one note on its READs, the read-ahead, naming readahead_kb" "$M" \
	"len(s['notes']) == 1 and s['notes'][0].startswith('random READs of tok.bin: ') and 'readahead_kb=N' in s['notes'][0] and ' %d KiB' % (min(s['read_ahead'], 1 << 20) >> 10) in s['notes'][0]"
"$TOP/prefetchfs-stat" -n 1 "$M" >"$WORK/stat.txt"
grep -A3 '^note:' "$WORK/stat.txt"
check "mmap reader: prefetchfs-stat's note: lines, within 80 columns" \
	bash -c "grep -q '^note: random READs of tok.bin' '$WORK/stat.txt' &&
		 ! sed -n '/^note:/,\$p' '$WORK/stat.txt' | awk 'length > 80' | grep -q ."
pf_umount "$M" || fail "unmount"
finish
