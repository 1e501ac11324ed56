#!/bin/bash
# The disk cache (-o cache_dir): every check compares what readers got with
# the source byte for byte.
#   1. over nginx: a first mount fills the cache; after unmount and remount
#      the files read without a single GET of file data (nginx's access
#      log), every read a hit
#   2. a file changed at the source while unmounted (new bytes, new mtime):
#      the remount serves the new bytes, never the cached old ones; over
#      S3 an object replaced by one of the same size (a new ETag) too
#   3. kill -9 of the daemon at random moments while it fills the cache
#      (5 times), then a remount: bytes exact
#   4. disk full: the cache dir is an 8 MiB tmpfs, the cache told to be
#      64M: every read is byte-exact, the log says so once, no reader sees
#      an error, the cache holds most of the disk; the next mount replays
#      every block and serves what fitted
#   5. two daemons on one cache dir: the second refuses with one line
#   6. the stats file shows the cache's counters; the memory cache, the
#      staging buffers and the index together stay within max_memory
#   7. a remount on a cache whose size changed (the free disk space did)
#      keeps its blocks while a new cache would get blocks at most twice
#      or half as large
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

SRC=$WORK/src
CACHE=$WORK/cache
M=$WORK/mnt
mkdir -p "$SRC/d" "$SRC/e"
mkfile "$SRC/big.bin" $((6 << 20))
mkfile "$SRC/odd.bin" 1234567
for i in $(seq 1 12); do
	mkfile "$SRC/d/s$i.jpg" $((110 * 1024 + i))
done
mkfile "$SRC/e/tiny" 100
TOTAL=$(find "$SRC" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')


# dc MNT EXPR: EXPR over the stats' transport.disk_cache as `c`
dc() { stats_eval "$1" "$2"; }

# ---- 1. persistence across a remount, over nginx ---------------------------

nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
OPTS=cache_dir=$CACHE,cache_size=64M
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS" || { fail "mount with cache_dir"; finish; }
check "first mount: byte-exact" all_same "$M"
check "first mount: blocks written to the cache" wait_cached "$M" "$TOTAL"
stats_check "first mount: reads missed the cache" "$M" "c['misses'] > 0"
pf_umount "$M" || fail "unmount"
before=$(data_gets)
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS" || { fail "remount"; finish; }
check "remount: byte-exact" all_same "$M"
after=$(data_gets)
echo "GETs of file data: first mount $before, after the remount $((after - before))"
check "remount: no GET of file data reached the server" [ "$after" -eq "$before" ]
stats_check "remount: every read hit the cache" "$M" "c['misses'] == 0 and c['hits'] > 0 and c['bytes_hit'] >= $TOTAL"
echo "stats after the remount: $(dc "$M" c)"

# ---- 6. the stats file -------------------------------------------------------

stats_check "stats: the cache's counters" "$M" "all(k in c for k in ('hits', 'misses', 'bytes_cached', 'bytes_written', 'evictions', 'errors', 'capacity')) and c['capacity'] == 64 << 20"
stats_check "stats: the HTTP transport's counters are kept" "$M" "'requests' in tr"

# ---- 5. two daemons on one cache dir ---------------------------------------

mkdir -p "$WORK/mnt2"
"$PF" -o "$OPTS" "$SRC" "$WORK/mnt2" >"$WORK/second.out" 2>&1
rc=$?
check "second daemon on the cache dir: refused" [ $rc -ne 0 ]
check "second daemon: one line" one_line_err "$WORK/second.out"
check "second daemon: says the dir is in use" grep -q "in use by another prefetchfs" "$WORK/second.out"
not_mounted() { ! mountpoint -q "$1"; }
check "second daemon: not mounted" not_mounted "$WORK/mnt2"
pf_umount "$M" || fail "unmount"

# ---- 2. a changed file after a remount -------------------------------------

mkfile "$SRC/odd.bin.new" 1234567
mv "$SRC/odd.bin.new" "$SRC/odd.bin"
touch -d '2001-02-03 04:05:06' "$SRC/odd.bin"
mkfile "$SRC/d/s3.jpg.x" $((110 * 1024 + 3))
mv "$SRC/d/s3.jpg.x" "$SRC/d/s3.jpg"
touch -d '2002-02-03 04:05:06' "$SRC/d/s3.jpg"
# revalidate=0: the cache dir also keeps the listings, and a version
# learnt less than revalidate ago (d/ was listed a moment ago) is served
# without asking the server (mount_listcache.sh)
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS,revalidate=0" || { fail "remount"; finish; }
check "changed files: the new bytes" cmp -s "$SRC/odd.bin" "$M/odd.bin"
check "changed files: the new bytes (small file)" cmp -s "$SRC/d/s3.jpg" "$M/d/s3.jpg"
check "changed files: the rest byte-exact" all_same "$M"
pf_umount "$M" || fail "unmount"

# ---- 7. the free disk space changed between mounts -------------------------

# A new cache's block doubles until the index fits an eighth of max_memory
# (52428 slots with 32M): cache_size=1200M gets 32 KiB blocks, 1700M 64 KiB
# ones.  Without cache_size the size is the free disk space, which other
# files change between two mounts: a cache keeps its block size (and its
# blocks) while a new one would get at most twice or half that.
ZC=$WORK/zcache
pf_mount_ready "$NGINX_URL" "$M" -o "cache_dir=$ZC,cache_size=1200M,max_memory=32M" ||
	{ fail "mount, 1200M"; finish; }
check "7. 1200M: byte-exact" all_same "$M"
check "7. 1200M: blocks written to the cache" wait_cached "$M" "$TOTAL"
pf_umount "$M" || fail "unmount"
before=$(data_gets)
pf_mount_ready "$NGINX_URL" "$M" -o "cache_dir=$ZC,cache_size=1700M,max_memory=32M" ||
	{ fail "mount, 1700M"; finish; }
check "7. 1700M: byte-exact" all_same "$M"
after=$(data_gets)
echo "7. the cache after 1200M then 1700M: $(dc "$M" c)"
check "7. 1700M: no GET of file data reached the server ($((after - before)))" [ "$after" -eq "$before" ]
stats_check "7. 1700M: the journal replayed, every read a hit" "$M" "c['replayed'] > 0 and c['misses'] == 0"
stats_check "7. 1700M: the index within an eighth of max_memory" "$M" "c['index_bytes'] <= 4 << 20"
pf_umount "$M" || fail "unmount"
# 5000M: a new cache would get 4 times the block: one line, the cache
# starts empty
pf_mount_ready "$NGINX_URL" "$M" -o "cache_dir=$ZC,cache_size=5000M,max_memory=32M" ||
	{ fail "mount, 5000M"; finish; }
check "7. 5000M: byte-exact" all_same "$M"
stats_check "7. 5000M: a new cache" "$M" "c['replayed'] == 0 and c['misses'] > 0"
check "7. 5000M: the log says why, once" \
	[ "$(grep -c "blocks of 32 KiB.*starts empty" "$WORK/daemon.$(basename "$M").log")" -eq 1 ]
pf_umount "$M" || fail "unmount"
nginx_stop

# ---- 2b. the same over S3: an object replaced by one of the same size ----

S3SRC=$WORK/s3src
mkdir -p "$S3SRC"
mkfile "$S3SRC/x.bin" $((3 << 20))
mkfile "$S3SRC/y.bin" 70000
S3_LOG=1 s3_start bkt >/dev/null || { fail "s3 server"; finish; }
s3_put_tree bkt ds/ "$S3SRC" || { fail "s3_put_tree"; finish; }
creds() { AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET "$@"; }
S3OPTS=endpoint=$S3_ENDPOINT,cache_dir=$WORK/s3cache,cache_size=32M
creds pf_mount_ready s3://bkt/ds/ "$M" -o "$S3OPTS" || { fail "mount s3"; finish; }
check "s3: byte-exact" cmp -s "$S3SRC/x.bin" "$M/x.bin"
check "s3: byte-exact (small)" cmp -s "$S3SRC/y.bin" "$M/y.bin"
check "s3: blocks written to the cache" wait_cached "$M" $(((3 << 20) + 70000))
pf_umount "$M" || fail "unmount"
# same sizes, new bytes: only the ETag (and maybe not the second of
# LastModified) tells the versions apart
mkfile "$WORK/x.v2" $((3 << 20))
mv "$WORK/x.v2" "$S3SRC/x.bin"
s3_replace bkt ds/x.bin "$S3SRC/x.bin" || fail "s3_replace"
creds pf_mount_ready s3://bkt/ds/ "$M" -o "$S3OPTS" || { fail "remount s3"; finish; }
check "s3: the replaced object reads new bytes" cmp -s "$S3SRC/x.bin" "$M/x.bin"
check "s3: the other object byte-exact" cmp -s "$S3SRC/y.bin" "$M/y.bin"
stats_check "s3: the other object is served from the cache" "$M" "c['hits'] > 0"
pf_umount "$M" || fail "unmount"
s3_stop

# ---- 3. kill -9 while filling ------------------------------------------------

# each round adds a file the cache has not seen, so that the kill comes
# while blocks are written and journalled; after each kill a remount
# replays the journal and must read every file exactly
KC=$WORK/kcache
KOPTS=cache_dir=$KC,cache_size=96M,max_memory=32M
bad=0
for i in 1 2 3 4 5; do
	mkfile "$SRC/k$i.bin" $((8 << 20))
	pf_mount_ready "$SRC" "$M" -o "$KOPTS" || { fail "mount $i"; break; }
	(cd "$M" && find . -type f -exec cat {} + >/dev/null 2>&1) &
	reader=$!
	sleep "0.$((RANDOM % 6))$((RANDOM % 10))"
	kill_daemon "$M"
	wait "$reader" 2>/dev/null
	pf_mount_ready "$SRC" "$M" -o "$KOPTS" || { fail "mount after kill $i"; break; }
	all_same "$M" || bad=$((bad + 1))
	echo "after kill -9 number $i: $(dc "$M" "(c['replayed'], c['hits'], c['misses'], c['dropped'])") (records replayed, hits, misses, dropped)"
	pf_umount "$M" || fail "unmount"
done
check "5 x kill -9 while filling, remount after each: byte-exact" [ $bad -eq 0 ]
pf_mount_ready "$SRC" "$M" -o "$KOPTS" || { fail "mount after kill -9"; finish; }
check "after kill -9: byte-exact" all_same "$M"
stats_check "after kill -9: the cache served reads" "$M" "c['hits'] > 0"
# the disk tier's staging and index come out of max_memory=32M, and the
# staging taken from the system stays within its share
stats_check "memory: the memory cache, staging and index fit max_memory" "$M" "t['memory_max'] + c['staging_max'] + c['index_bytes'] <= 32 << 20 and 0 < c['staging_mapped'] <= c['staging_max']"
pf_umount "$M" || fail "unmount"

# ---- 4. disk full -----------------------------------------------------------

TC=$WORK/tcache
mkdir -p "$TC"
if mount -t tmpfs -o size=8m tmpfs "$TC"; then
	CLEANUP_HOOKS+=("umount '$TC'")
	pf_mount_ready "$SRC" "$M" -o cache_dir=$TC/c,cache_size=64M || { fail "mount on a full disk"; finish; }
	check "disk full: byte-exact" all_same "$M"
	check "disk full: byte-exact, twice" all_same "$M"
	log="$WORK/daemon.$(basename "$M").log"
	n=$(grep -c "disk cache: write: No space left on device" "$log")
	check "disk full: logged once ($n)" [ "$n" -eq 1 ]
	stats_check "disk full: counted as errors, capacity shrunk" "$M" "c['errors'] > 0 and c['capacity'] < 16 << 20"
	# the journal grows on the same disk: its records have their room
	# before the blocks' data takes the last of it (else a block written
	# when the journal could not grow is not cached: 63 of 509)
	stats_check "disk full: the cache holds most of the disk" "$M" "c['bytes_cached'] >= 6 << 20"
	echo "disk full: $(dc "$M" c)"
	blocks=$(dc "$M" "c['blocks']")
	pf_umount "$M" || fail "unmount"
	pf_mount_ready "$SRC" "$M" -o cache_dir=$TC/c,cache_size=64M || { fail "remount on a full disk"; finish; }
	check "disk full, remount: byte-exact" all_same "$M"
	stats_check "disk full, remount: every block cached is replayed" "$M" "c['replayed'] > $blocks"
	stats_check "disk full, remount: what fitted is served" "$M" "c['hits'] > 0"
	pf_umount "$M" || fail "unmount"
	# (the tmpfs is unmounted by cleanup, after the mounts)
else
	fail "cannot mount a tmpfs for the disk-full case"
fi

finish
