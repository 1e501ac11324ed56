#!/bin/bash
# The background fill with a disk cache: a tree larger than memory (800
# files of 120 KiB, ~94 MiB, in 8 directories, over nginx) with
# -o cache_dir,max_memory=32M.  A shuffled reader opens files in random
# order with a pause; the fill, whose budget is the disk tier's capacity(),
# reads the rest of the tree through memory to the disk cache:
#  - the stats' fill reaches "done" with bytes_done == bytes_total;
#  - the disk cache holds the tree (transport.disk_cache.bytes_cached), and
#    few of the fill's reads went past it uncached (staging full);
#  - a second pass over every file in another random order (the kernel's
#    page cache dropped) sends ~0 GETs of file data to nginx and reads
#    every byte exactly;
#  - so does a third pass after a remount on the same cache dir, and the
#    fill, which starts again, reads none of the files the disk tier holds
#    whole (stats fill.on_disk).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools "$HELPERS/treeread.py"

SRC=$WORK/src
CACHE=$WORK/cache
M=$WORK/mnt
NDIR=8
PER=100
SIZE=$((120 * 1024))
N=$((NDIR * PER))
TOTAL=$((N * SIZE))
# one 96 MiB stream cut into files: quicker than 800 openssl runs
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
[ ${#FILES[@]} -eq $N ] || { fail "the tree: ${#FILES[@]} files"; finish; }
# the reader, tests/helpers/treeread.py: opens the files given (here in the
# order of a random seed), reads each whole, compares with $SRC

nginx_start "$SRC" --json >/dev/null || { fail "nginx"; finish; }
pf_mount_ready "$NGINX_URL" "$M" -o "cache_dir=$CACHE,max_memory=32M" ||
	{ fail "mount with cache_dir,max_memory=32M"; finish; }
stats_check "the disk tier reports a capacity larger than the tree" "$M" "c['capacity'] * 7 // 8 >= $TOTAL"

# ---- 1. a shuffled reader: the fill starts and runs to the end ------------
if guard "$M" 300 "$HELPERS/treeread.py" --pause 30 --shuffle 1 --count 60 "$M" "$SRC" "${FILES[@]}"; then
	ok "shuffled reader, 60 files: every byte exact"
else
	fail "shuffled reader: failed"
fi
t0=$(date +%s)
for ((i = 0; i < 1800; i++)); do
	[ "$(stats_eval "$M" "s['fill']['state'] == 'done' and s['fill']['bytes_done'] == s['fill']['bytes_total']")" = True ] && break
	[ "$(stats_eval "$M" "s['fill']['state'] in ('stopped', 'too_big', 'off')")" = True ] && [ $i -gt 50 ] && break
	sleep 0.1
done
echo "fill after $(($(date +%s) - t0)) s: $(stats_eval "$M" "s['fill']")"
stats_check "fill: done, bytes_done == bytes_total == the tree" "$M" \
	"s['fill']['state'] == 'done' and s['fill']['root'] == 'tree' and s['fill']['bytes_total'] == $TOTAL and s['fill']['bytes_done'] == $TOTAL"
# the ring thread writes the last blocks after the fill's reads completed
for ((i = 0; i < 300; i++)); do
	[ "$(stats_eval "$M" "c['bytes_cached'] >= $TOTAL * 95 // 100")" = True ] && break
	sleep 0.1
done
echo "disk cache after the fill: $(stats_eval "$M" c)"
stats_check "disk cache: holds ~the tree (>= 95%)" "$M" "c['bytes_cached'] >= $TOTAL * 95 // 100"
stats_check "disk cache: < 5% of the tree read past it uncached (staging full)" "$M" "c['uncached'] < $TOTAL // 20"
stats_check "memory: the tree is more than 4 x the memory for blocks" "$M" "4 * t['memory_max'] < $TOTAL"
check "the log: the fill never stopped (it fits the disk tier)" \
	bash -c "! grep -q 'background fill of tree stopped' '$WORK/daemon.$(basename "$M").log'"

# ---- 2. every file again, in another order: disk hits, no GET --------------
drop_page_cache "${FILES[@]/#/$M/}"
before=$(data_gets)
h0=$(stats_eval "$M" "c['hits']")
if guard "$M" 300 "$HELPERS/treeread.py" --shuffle 2 "$M" "$SRC" "${FILES[@]}"; then
	ok "second pass, every file in another order: every byte exact"
else
	fail "second pass: failed"
fi
after=$(data_gets)
echo "GETs of file data: $before before the second pass, $((after - before)) during it; disk hits $h0 -> $(stats_eval "$M" "c['hits']")"
check "second pass: at most 8 GETs of file data (of $N files)" [ $((after - before)) -le 8 ]
stats_check "second pass: served from the disk cache" "$M" "c['hits'] > $h0"
echo "stats after the second pass: $(stats_eval "$M" "(s['fill'], t['memory_max'], c)")"
pf_umount "$M" || fail "unmount"

# ---- 3. after a remount: the disk cache still serves the tree --------------
pf_mount_ready "$NGINX_URL" "$M" -o "cache_dir=$CACHE,max_memory=32M" ||
	{ fail "remount"; finish; }
before=$(data_gets)
if guard "$M" 300 "$HELPERS/treeread.py" --shuffle 3 "$M" "$SRC" "${FILES[@]}"; then
	ok "remount, every file in a third order: every byte exact"
else
	fail "remount: the reader failed"
fi
after=$(data_gets)
echo "remount: $((after - before)) GETs of file data; disk cache $(stats_eval "$M" c)"
check "remount: at most 8 GETs of file data (of $N files)" [ $((after - before)) -le 8 ]
# the fill after the remount holds the files the disk tier has whole and
# reads none of them again (only the reader's reads hit the disk)
stats_check "remount: the fill found files whole on disk" "$M" "s['fill']['on_disk'] > 0"
stats_check "remount: the fill read nothing from disk (hits < 1.5 x the tree)" "$M" \
	"c['bytes_hit'] < $TOTAL * 3 // 2"
pf_umount "$M" || fail "unmount"
nginx_stop

finish
