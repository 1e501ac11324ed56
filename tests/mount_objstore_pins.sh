#!/bin/bash
# What an object-store mount pins, against tests/helpers/faultd.py (its
# request log tells what the daemon asked) and s3rver:
#   1. an index without sizes (python -m http.server's, Apache's): after
#      `ls -l` (READDIRPLUS gave the kernel size 0) a file reads whole, and
#      stat after its open shows the size the open pinned
#   2. a manifest whose sizes are wrong (too small, too large): reads give
#      the object's bytes, all of them, and stat after the open its size
#   3. a server without ETag: the version is pinned by Last-Modified
#      (If-Unmodified-Since); the file replaced under an open reader gives
#      EIO, never the new bytes
#   5. S3 listings: a continuation token that comes back, a listing without
#      end (past a quarter of max_memory): that ls fails (EIO, ENOMEM), the
#      mount stays up and lists the rest
#   7. S3 (s3rver): the listing's ETag and size pin an open, no request;
#      revalidate=0 makes one HEAD per open
# Nothing here is timed (revalidate=60 in 7 leaves a minute for two
# opens); the deadlines (4) and revalidate's clock (6) are
# tests/mount_objstore.sh.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
. "$(dirname "$0")/objstore_common.sh"
need_fuse
need_tools

# ---- the source ----------------------------------------------------------
P=$WORK/plain		# python-like index, no ETag
mkdir -p "$P"
mkfile "$P/p1.bin" $((1 << 20))
mkfile "$P/p2.bin" 300001
mkfile "$P/m1.bin" $((1 << 20))
mkfile "$P/m2.bin" 524288
mkfile "$P/c1.bin" $((8 << 20))
printf 'm1.bin 1000\nm2.bin 2000000\n' >"$P/manifest.txt"
cp "$P/c1.bin" "$WORK/c1.v1"
faultd_start "$P" --no-etag --plain-index >/dev/null || { fail "faultd"; finish; }
UP=$FAULTD_URL

# ---- 1. an index without sizes --------------------------------------------
M=$WORK/mnt-plain
pf_mount_ready "$UP/" "$M" || exit 1
guard "$M" 40 ls -l "$M" >"$WORK/ls1" || fail "ls -l of the plain index"
check "[sizes] ls -l lists p1.bin" grep -q 'p1.bin' "$WORK/ls1"
check "[sizes] p1.bin read after ls -l is the whole object" guard "$M" 40 cmp "$M/p1.bin" "$P/p1.bin"
check "[sizes] p2.bin (odd size) read after ls -l is the whole object" guard "$M" 40 cmp "$M/p2.bin" "$P/p2.bin"
exec 7<"$M/p2.bin"
s=$(size_of "$M/p2.bin")
check "[sizes] stat after the open shows the pinned size ($s)" test "$s" = 300001
guard "$M" 40 ls -l "$M" >"$WORK/ls2"
check "[sizes] ls -l after the open shows it" grep -qE ' 300001 .*p2.bin' "$WORK/ls2"
exec 7<&-

# ---- 3. no ETag: Last-Modified pins the version -----------------------------
M=$WORK/mnt-noetag
pf_mount_ready "$UP/" "$M" -o "$SMALL" || exit 1
reset "$UP"
# a new mtime second for the replacement
past_mtime "$P/c1.bin"
r=$(guard "$M" 40 python3 - "$M/c1.bin" "$WORK/c1.v1" "$UP" <<'PY'
import os, sys, urllib.request
f, ref, u = sys.argv[1:4]
old = open(ref, "rb").read()
fd = os.open(f, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
a = os.pread(fd, 65536, 0)
print("first", "ok" if a == old[:65536] else "wrong")
urllib.request.urlopen(u + "/_replace?path=/c1.bin").read()
for off in (4 << 20, 6 << 20):
    try:
        b = os.pread(fd, 65536, off)
        new = bytes(x ^ 0xA5 for x in old[off:off + 65536])
        print(off, "OLD" if b == old[off:off + 65536] else
              "NEW" if b == new else "MIXED")
    except OSError as e:
        print(off, "errno", e.errno)
PY
)
echo "$r" | sed 's/^/  /'
check "[no etag] the first read is of the first version" grep -q '^first ok' <<<"$r"
check "[no etag] reads after the replacement: EIO, never other bytes" \
	test "$(grep -c ' errno 5$' <<<"$r")" = 2
check "[no etag] the GETs carried If-Unmodified-Since" \
	test "$(nlog "$UP" 'len(G("c1.bin")) > 0 and all(e["if_unmodified_since"] for e in G("c1.bin"))')" = True
check "[no etag] the daemon logged the change" grep -qiE 'changed on the server|412' "$WORK/daemon.mnt-noetag.log"

# ---- 2. a manifest with wrong sizes ---------------------------------------
M=$WORK/mnt-manifest
pf_mount_ready "$UP/" "$M" -o manifest=manifest.txt || exit 1
check "[manifest] m1.bin (listed as 1000 bytes) reads whole" guard "$M" 40 cmp "$M/m1.bin" "$P/m1.bin"
check "[manifest] m2.bin (listed as 2000000 bytes) reads exactly" guard "$M" 40 cmp "$M/m2.bin" "$P/m2.bin"
exec 7<"$M/m1.bin"
s=$(size_of "$M/m1.bin")
check "[manifest] stat of m1.bin after the open: $s (pinned 1048576)" test "$s" = 1048576
exec 7<&-
exec 7<"$M/m2.bin"
s=$(size_of "$M/m2.bin")
check "[manifest] stat of m2.bin after the open: $s (pinned 524288)" test "$s" = 524288
exec 7<&-

# ---- 5. S3 listings bounded -------------------------------------------------
S3O="endpoint=$UP,no_sign,addressing=path,region=us-east-1,max_memory=64M"
fault "$UP" 'path=/bkt&mode=s3_list:0&count=inf'
M=$WORK/mnt-s3loop
pf_mount_ready s3://bkt "$M" -o "$S3O" || exit 1
r=$(lsd "$M" 40 "$M/d")
check "[listing] a repeated continuation token: ls fails with EIO ($r s)" test "${r% *}" = "errno 5"
check "[listing] the daemon names the repeated token" grep -q 'repeats a continuation token' "$WORK/daemon.mnt-s3loop.log"
check "[listing] the mount still lists its root" guard "$M" 40 test -e "$M/k"
reset "$UP"
fault "$UP" 'path=/bkt&mode=s3_list:1&count=inf'
M=$WORK/mnt-s3big
pf_mount_ready s3://bkt "$M" -o "$S3O" || exit 1
r=$(lsd "$M" 60 "$M/d")
check "[listing] a listing without end: ENOMEM past max_memory/4 ($r s)" test "${r% *}" = "errno 12"
check "[listing] the daemon says which limit" grep -q 'more than 16 MiB' "$WORK/daemon.mnt-s3big.log"
check "[listing] the mount still lists its root" guard "$M" 40 test -e "$M/k"
check "[listing] the daemon is still up" test -n "$(pf_pid "$M")"
reset "$UP"

# ---- 7. S3: the listing's ETag and size pin an open ----------------------------
# (s3rver logs no request line for a GET or HEAD: the requests are counted
# by the daemon, stats "transport.requests"; the reads of both mounts are
# the same, so a HEAD per open is the difference)
S3_LOG=1 s3_start bkt >/dev/null || { fail "s3 server"; finish; }
mkdir -p "$WORK/s3src"
for f in s1 s2; do mkfile "$WORK/s3src/$f.bin" $((1 << 20)); done
s3_put_tree bkt ds/ "$WORK/s3src" || { fail "s3_put_tree"; finish; }
for rv in 60 0; do
	M=$WORK/mnt-s3-$rv
	AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET \
		pf_mount_ready s3://bkt/ds/ "$M" -o "endpoint=$S3_ENDPOINT,$SMALL,revalidate=$rv" || exit 1
	guard "$M" 40 ls -l "$M" >/dev/null
	n0=$(stats_eval "$M" 'tr["requests"]')
	check "[s3 revalidate=$rv] s1.bin reads whole" guard "$M" 40 cmp "$M/s1.bin" "$WORK/s3src/s1.bin"
	check "[s3 revalidate=$rv] s2.bin reads whole" guard "$M" 40 cmp "$M/s2.bin" "$WORK/s3src/s2.bin"
	n=$(stats_eval "$M" 'tr["requests"]')
	eval "req$rv=$((n - n0))"
done
check "[s3] the opens of revalidate=60 made no request: $req60 requests, $req0 with a HEAD per open" \
	test "$req0" = $((req60 + 2))
check "[s3] ... and read with 16 GETs a file ($req60)" test "$req60" = 32

finish
