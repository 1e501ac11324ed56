#!/bin/bash
# tests/run: parallel
# A shuffled tree larger than the disk cache (320 files of 256 KiB, 80 MiB,
# in 2 directories, over nginx: directories of many files, so that random
# opens seldom look like a reader in name order) with -o cache_dir,cache_size=48M,max_memory=32M:
# the tier holds about half of it, memory much less.  A shuffled reader
# opens a few files; the fill, which cannot hold the tree, fills a stable
# subset of it through the disk tier (src/engine/ahead/fillset.c):
#  - the stats' fill is done with part_files/part_bytes: the subset, in
#    3/4 of the tier's capacity, and the tier holds all of it (in_tier),
#    as the fill's (disk_cache.bytes_kept); memory stayed within its budget;
#  - the subset is the one the files' ranks choose (computed here from the
#    listing, as fillset.c does): the same after a remount;
#  - a second mount on the same cache dir reads every file in another
#    shuffled order, every byte exact, and sends no GET of a file of the
#    subset to nginx (its fill finds them all on disk: fill.on_disk);
#  - the prefetchfs-stat screen says so, and names the cache_size that
#    would hold the whole tree.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools "$HELPERS/treeread.py"

SRC=$WORK/src
CACHE=$WORK/cache
M=$WORK/mnt
NDIR=2
PER=160
SIZE=$((256 << 10))
N=$((NDIR * PER))
TOTAL=$((N * SIZE))
OPTS="cache_dir=$CACHE,cache_size=48M,max_memory=32M"
mkfile "$WORK/all" "$TOTAL"
for ((d = 0; d < NDIR; d++)); do
	mkdir -p "$SRC/tree/c$d"
	for ((i = 0; i < PER; i++)); do
		k=$((d * PER + i))
		dd if="$WORK/all" of="$SRC/tree/c$d/f$i.bin" bs=$SIZE skip=$k count=1 status=none
	done
done
rm -f "$WORK/all"
mapfile -t FILES < <(cd "$SRC" && find tree -type f | sort)

# subset BUDGET: the files fillset.c keeps of the tree in BUDGET bytes (the
# files ranked by FNV-1a + splitmix64 of their path, taken while they fit)
subset() {
	python3 - "$1" "$SIZE" "${FILES[@]}" <<'EOF'
import sys
M = (1 << 64) - 1
def rank(p):
    h = 0xcbf29ce484222325
    for b in p.encode():
        h = ((h ^ b) * 0x100000001b3) & M
    h ^= h >> 30; h = (h * 0xbf58476d1ce4e5b9) & M
    h ^= h >> 27; h = (h * 0x94d049bb133111eb) & M
    return h ^ (h >> 31)
budget, size, files = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
left = budget
for i, p in sorted(enumerate(files), key=lambda x: (rank(x[1]), x[0])):
    if size <= left:
        left -= size
        print(p)
EOF
}
# gets_of FILE...: GETs of those files in nginx's log
gets_of() {
	local f n=0
	for f in "$@"; do
		n=$((n + $(grep -c "\"GET /$f " "$NGINX_DIR/access.log")))
	done
	echo $n
}

nginx_start "$SRC" --json >/dev/null || { fail "nginx"; finish; }
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS" || { fail "mount with $OPTS"; finish; }
pid=$(cat "$WORK/pid.$(basename "$M")")
stat "$M/tree" >/dev/null
hwm0=$(hwm_kb "$pid")
stats_check "the tree is larger than the disk tier, the tier than memory" "$M" \
	"c['capacity'] < $TOTAL and c['capacity'] * 7 // 8 > t['memory_max']"

# ---- 1. a shuffled reader: the fill of a stable subset ----------------------
if guard "$M" 120 "$HELPERS/treeread.py" --pause 20 --shuffle 1 --count 40 "$M" "$SRC" "${FILES[@]}"; then
	ok "shuffled reader, 40 files: every byte exact"
else
	fail "shuffled reader: failed"
fi
for ((i = 0; i < 1200; i++)); do
	[ "$(stats_eval "$M" "s['fill']['state']")" = done ] && break
	[ "$(stats_eval "$M" "s['fill']['state'] in ('stopped', 'too_big', 'off')")" = True ] && [ $i -gt 50 ] && break
	sleep 0.1
done
echo "fill: $(stats_eval "$M" "s['fill']")"
echo "disk cache: $(stats_eval "$M" c)"
stats_check "the fill is done: a subset of the tree, through the disk tier" "$M" \
	"s['fill']['state'] == 'done' and s['fill']['through'] and s['fill']['tier_full'] and s['fill']['tree_files'] == $N and s['fill']['bytes_total'] == $TOTAL and 0 < s['fill']['part_files'] < $N"
stats_check "the subset: within 3/4 of the tier's capacity() (7/8 of its slots)" "$M" \
	"0 < s['fill']['part_bytes'] <= c['capacity'] * 7 // 8 * 3 // 4 and s['fill']['bytes_done'] == s['fill']['part_bytes']"
stats_check "the tier holds all of the subset, as the fill's" "$M" \
	"s['fill']['in_tier'] == s['fill']['part_bytes'] and c['bytes_kept'] >= s['fill']['part_bytes'] and c['bytes_cached'] <= c['capacity']"
stats_check "memory within its budget, holding none of the fill (the subset is larger)" "$M" \
	"t['memory_used'] <= t['memory_max'] < s['fill']['part_bytes'] and t['memory_ahead'] <= t['memory_max'] // 2"
check_peak_rss "$pid" "$hwm0" 32
PART=$(stats_eval "$M" "s['fill']['part_files']")
CAP=$(stats_eval "$M" "c['capacity'] * 7 // 8 * 3 // 4")
mapfile -t KEPT < <(subset "$CAP")
echo "the subset: ${#KEPT[@]} files: ${KEPT[*]}"
check "the subset is the files' ranks' (${#KEPT[@]} = $PART files)" [ "${#KEPT[@]}" -eq "$PART" ]
"$TOP/prefetchfs-stat" -n 1 "$M" >"$WORK/stat.out" 2>&1
sed -n '1,12p' "$WORK/stat.out"
check "prefetchfs-stat: the subset and the full disk tier" \
	grep -q "fill subset $PART of $N files, .* disk tier full" "$WORK/stat.out"
# (the tree x 8/7, a MiB more, rounded up: what capacity() would fill whole)
check "prefetchfs-stat: the advice names cache_size=92.5M" \
	bash -c "tr -s ' \n' ' ' <'$WORK/stat.out' | grep -q 'advice: shuffled reads of tree (83886080 bytes) .*cache_size=92.5M'"
pf_umount "$M" || fail "unmount"

# ---- 2. a remount: the subset from disk, no GET of it ----------------------
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS" || { fail "remount"; finish; }
g0=$(gets_of "${KEPT[@]}")
a0=$(data_gets)
if guard "$M" 120 "$HELPERS/treeread.py" --pause 10 --shuffle 2 "$M" "$SRC" "${FILES[@]}"; then
	ok "remount, every file in another order: every byte exact"
else
	fail "remount: the reader failed"
fi
for ((i = 0; i < 300; i++)); do
	[ "$(stats_eval "$M" "s['fill']['state']")" = done ] && break
	sleep 0.1
done
echo "remount: fill $(stats_eval "$M" "s['fill']")"
echo "remount: disk cache $(stats_eval "$M" c)"
g1=$(gets_of "${KEPT[@]}")
echo "remount: $((g1 - g0)) GETs of the subset's files, $(($(data_gets) - a0)) of all"
check "remount: no GET of a file of the subset" [ "$g1" -eq "$g0" ]
stats_check "remount: the same subset, found whole on disk" "$M" \
	"s['fill']['state'] == 'done' and s['fill']['part_files'] == $PART and s['fill']['on_disk'] == $PART and s['fill']['in_tier'] == s['fill']['part_bytes']"
drop_page_cache "${FILES[@]/#/$M/}"
check "remount: every byte of every file exact" all_same "$M"
stats_check "remount: the subset still on disk after the other files' misses" "$M" \
	"c['bytes_kept'] >= s['fill']['part_bytes']"
pf_umount "$M" || fail "unmount"
nginx_stop
finish
