#!/bin/bash
# Listings kept in the cache dir (-o cache_dir over nginx's JSON index):
#   1. a first mount lists and reads; the cache dir then holds one
#      listings file for the source
#   2. a remount within revalidate serves stat and reads of the stored
#      directories with no listing GET of them and no HEAD (nginx's access
#      log): only the root is listed, the check that the source answers
#   3. a damaged listings file: one log line, the directories are listed
#      again, reads byte-exact
#   4. an object changed while unmounted: with revalidate=0 the remount
#      reads the new bytes at once, and lists the stored directories again
#      in the background; with revalidate=2 the new bytes once 2 s passed
#      since the listing was stored
#   6. a relative cache_dir, the daemon in the background (it changes to
#      /): the listings file is written in that dir
#   7. without cache_dir: the root's listing at mount (the check that the
#      source answers) serves ls and the first open; a directory is listed
#      once; no HEAD
#   5. over s3rver (ListObjectsV2: ETags): the remount serves stat and
#      reads of a stored directory with one request, the root listing (the
#      daemon's count: s3rver logs no request lines)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

SRC=$WORK/src
CACHE=$WORK/cache
M=$WORK/mnt
mkdir -p "$SRC/d1" "$SRC/d2"
mkfile "$SRC/r.bin" 300000
for i in 1 2 3 4 5; do
	mkfile "$SRC/d1/a$i.bin" $((50000 + i))
	mkfile "$SRC/d2/b$i.bin" $((60000 + i))
done


# since N: the access log's lines after line N
since() { tail -n +"$(($1 + 1))" "$NGINX_DIR/access.log"; }
lines() { wc -l <"$NGINX_DIR/access.log"; }
# wait_for N RE: a line after N matches RE (10 s at most)
wait_for() {
	local i
	for ((i = 0; i < 100; i++)); do
		since "$1" | grep -qE "$2" && return 0
		sleep 0.1
	done
	return 1
}

nginx_start "$SRC" --json >/dev/null || { fail "nginx"; finish; }
OPTS=cache_dir=$CACHE,cache_size=16M

# ---- 1. first mount --------------------------------------------------------
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS,revalidate=60" || { fail "mount"; finish; }
check "1. first mount: byte-exact" all_same "$M"
ls -lR "$M" >/dev/null
pf_umount "$M" || fail "unmount"
nfiles=$(ls "$CACHE"/listings-* 2>/dev/null | wc -l)
check "1. the cache dir holds one listings file ($nfiles)" [ "$nfiles" -eq 1 ]
LST=$(ls "$CACHE"/listings-* | head -1)

# ---- 2. remount within revalidate: no relisting, no HEAD --------------------
n=$(lines)
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS,revalidate=60" || { fail "remount"; finish; }
stat "$M"/d1/a*.bin "$M"/d2/b*.bin >/dev/null
check "2. remount: stored files byte-exact" all_same "$M"
since "$n" >"$WORK/log2"
echo "  requests after the remount: $(wc -l <"$WORK/log2") ($(grep -c '"HEAD ' "$WORK/log2") HEAD)"
check "2. remount: the root is listed once (the source check)" \
	[ "$(grep -c '"GET / HTTP' "$WORK/log2")" -eq 1 ]
check "2. remount: no listing GET of a stored directory" \
	[ "$(grep -cE '"GET /d[12]/ HTTP' "$WORK/log2")" -eq 0 ]
check "2. remount: no HEAD" [ "$(grep -c '"HEAD ' "$WORK/log2")" -eq 0 ]
check "2. remount: the log says the listings were read" \
	grep -q "listings of 2 directories read" "$WORK/daemon.mnt.log"
pf_umount "$M" || fail "unmount"

# ---- 3. a damaged listings file ----------------------------------------------
python3 - "$LST" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x20
open(p, "wb").write(b)
PY
n=$(lines)
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS,revalidate=60" || { fail "mount, damaged file"; finish; }
check "3. damaged: byte-exact" all_same "$M"
check "3. damaged: one log line" [ "$(grep -c 'is damaged' "$WORK/daemon.mnt.log")" -eq 1 ]
check "3. damaged: the directories are listed again" \
	[ "$(since "$n" | grep -cE '"GET /d[12]/ HTTP')" -eq 2 ]
pf_umount "$M" || fail "unmount"

# ---- 4. an object changed while unmounted ------------------------------------
mkfile "$WORK/v2" 51234
mv "$WORK/v2" "$SRC/d1/a1.bin"
n=$(lines)
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS,revalidate=0" || { fail "mount revalidate=0"; finish; }
check "4. revalidate=0: the changed object reads new bytes" cmp -s "$SRC/d1/a1.bin" "$M/d1/a1.bin"
check "4. revalidate=0: all byte-exact" all_same "$M"
check "4. revalidate=0: the stored directories are listed again in the background" \
	wait_for "$n" '"GET /d2/ HTTP'
pf_umount "$M" || fail "unmount"

mkfile "$WORK/v3" 61111
mv "$WORK/v3" "$SRC/d2/b1.bin"
pf_mount_ready "$NGINX_URL" "$M" -o "$OPTS,revalidate=2" || { fail "mount revalidate=2"; finish; }
sleep 3
check "4. revalidate=2, after 3 s: the changed object reads new bytes" cmp -s "$SRC/d2/b1.bin" "$M/d2/b1.bin"
check "4. revalidate=2: all byte-exact" all_same "$M"
pf_umount "$M" || fail "unmount"

# ---- 6. a relative cache_dir, in the background -------------------------------
cd "$WORK" || { fail "cd"; finish; }
pf_mount "$NGINX_URL" "$WORK/mnt-bg" -o cache_dir=relcache,cache_size=16M ||
	{ fail "mount with a relative cache_dir"; finish; }
cd - >/dev/null || { fail "cd back"; finish; }
ls -R "$WORK/mnt-bg" >/dev/null
check "6. relative cache_dir: byte-exact" all_same "$WORK/mnt-bg"
pf_umount "$WORK/mnt-bg" || fail "unmount"
check "6. relative cache_dir: the listings file is in it" \
	[ "$(ls "$WORK"/relcache/listings-* 2>/dev/null | wc -l)" -eq 1 ]

# ---- 7. without cache_dir: the mount's root listing is the one kept -----------
n=$(lines)
pf_mount_ready "$NGINX_URL" "$M" || { fail "mount without cache_dir"; finish; }
ls -l "$M" >/dev/null
check "7. byte-exact" cmp -s "$SRC/r.bin" "$M/r.bin"
ls -l "$M/d1" >/dev/null
ls -l "$M/d1" "$M" >/dev/null
since "$n" >"$WORK/log7"
check "7. the root is listed once, at mount: ls and open use that listing" \
	[ "$(grep -c '"GET / HTTP' "$WORK/log7")" -eq 1 ]
check "7. a directory is listed once" \
	[ "$(grep -c '"GET /d1/ HTTP' "$WORK/log7")" -eq 1 ]
check "7. no HEAD (the JSON index pins the version)" \
	[ "$(grep -c '"HEAD ' "$WORK/log7")" -eq 0 ]
pf_umount "$M" || fail "unmount"
nginx_stop

# ---- 5. over S3 ------------------------------------------------------------------
S3SRC=$WORK/s3src
mkdir -p "$S3SRC/sub"
mkfile "$S3SRC/top.bin" 70000
for i in 1 2 3; do
	mkfile "$S3SRC/sub/s$i.bin" $((80000 + i))
done
s3_start bkt >/dev/null || { fail "s3 server"; finish; }
s3_put_tree bkt ds/ "$S3SRC" || { fail "s3_put_tree"; finish; }
creds() { AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET "$@"; }
S3OPTS=endpoint=$S3_ENDPOINT,cache_dir=$WORK/s3cache,cache_size=16M,revalidate=60
requests() { stats_json "$1" | json_eval 's["transport"]["requests"]'; }
s3_same() {
	local i
	for i in 1 2 3; do
		cmp -s "$S3SRC/sub/s$i.bin" "$1/sub/s$i.bin" || return 1
	done
}
creds pf_mount_ready s3://bkt/ds/ "$M" -o "$S3OPTS" || { fail "mount s3"; finish; }
check "5. s3: byte-exact" s3_same "$M"
first=$(requests "$M")
pf_umount "$M" || fail "unmount"
creds pf_mount_ready s3://bkt/ds/ "$M" -o "$S3OPTS" || { fail "remount s3"; finish; }
stat "$M"/sub/*.bin >/dev/null
check "5. s3 remount: byte-exact" s3_same "$M"
r=$(requests "$M")
echo "  s3: requests of the first mount $first, of the remount $r"
check "5. s3 remount: one request, the root listing ($r)" [ "$r" -eq 1 ]
pf_umount "$M" || fail "unmount"
s3_stop

finish
