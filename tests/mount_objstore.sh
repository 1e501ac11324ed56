#!/bin/bash
# What an object-store mount pins and how long it may wait, against
# tests/helpers/faultd.py (its request log tells what the daemon asked):
#   1. an index without sizes (python -m http.server's, Apache's): after
#      `ls -l` (READDIRPLUS gave the kernel size 0) a file reads whole, and
#      stat after its open shows the size the open pinned
#   2. a manifest whose sizes are wrong (too small, too large): reads give
#      the object's bytes, all of them, and stat after the open its size
#   3. a server without ETag: the version is pinned by Last-Modified
#      (If-Unmodified-Since); the file replaced under an open reader gives
#      EIO, never the new bytes
#   4. request_timeout: a body trickled at 2 bytes a second, an error body
#      without end, a directory index trickled: EIO within the deadline,
#      the mount serves other files
#   5. S3 listings: a continuation token that comes back, a listing without
#      end (past a quarter of max_memory): that ls fails (EIO, ENOMEM), the
#      mount stays up and lists the rest
#   6. opens without round trips: nginx's JSON index gave size and mtime, so
#      an open within revalidate= makes no HEAD; the object replaced: EIO to
#      readers of the old version; after revalidate= an open HEADs and reads
#      the new bytes; revalidate=0 HEADs at every open
#   7. the same for S3 (s3rver): the listing's ETag and size pin an open,
#      no request; revalidate=0 makes one HEAD per open
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

FAULTD=$HELPERS/faultd.py
K64=65536
SMALL="prefetch=off,fetch_size=64K,block_size=64K"

# fd_start VAR ROOT [faultd options...]: faultd on ROOT, its URL (no final
# /) in $VAR; stopped at exit by servers.sh
fd_start() {
	local var=$1 root=$2 dir pid i
	shift 2
	dir=$(_srv_dir faultd)
	pid=$(_srv_spawn "$dir" python3 "$FAULTD" --port-file "$dir/port" "$@" "$root")
	for ((i = 0; i < 200; i++)); do
		[ -s "$dir/port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if [ ! -s "$dir/port" ]; then
		echo "faultd did not start; its log:"
		cat "$dir/log"
		exit 1
	fi
	printf -v "$var" 'http://127.0.0.1:%s' "$(cat "$dir/port")"
}


# fault URL RULE; reset URL (no rules, an empty log); nlog URL EXPR: EXPR
# over the request log L, H(name) the HEADs and G(name) the GETs of /name
fault() { curl -sf "$1/_fault?$2" >/dev/null || fail "adding the rule $2"; }
reset() { curl -sf -X DELETE "$1/_fault" >/dev/null && curl -sf -X DELETE "$1/_log" >/dev/null || fail "resetting faultd"; }
nlog() {
	curl -s "$1/_log" | python3 -c '
import json, sys
L = [json.loads(l) for l in sys.stdin if l.strip()]
H = lambda n: [e for e in L if e["method"] == "HEAD" and e["path"] == "/" + n]
G = lambda n: [e for e in L if e["method"] == "GET" and e["path"] == "/" + n]
print(eval(sys.argv[1]))' "$2"
}
size_of() { stat -c %s "$1"; }

# pread.py FILE OFF LEN REF: "ok", "short", "wrong", "new" (bytes of NEW,
# if given) or "errno N", and the seconds it took
cat >"$WORK/pread.py" <<'PY'
import os, sys, time
f, off, n, ref = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
new = open(sys.argv[5], "rb").read() if len(sys.argv) > 5 else None
t = time.monotonic()
fd = os.open(f, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
want = open(ref, "rb").read()[off:off + n]
try:
    b = os.pread(fd, n, off)
    r = "ok" if b == want else "short" if want.startswith(b) else \
        "new" if new and b == new[off:off + n] else "wrong"
except OSError as e:
    r = "errno %d" % e.errno
print("%s %.1f" % (r, time.monotonic() - t))
PY
rd1() { guard "$1" 40 python3 "$WORK/pread.py" "${@:2}"; }

# ---- the sources --------------------------------------------------------
P=$WORK/plain		# python-like index, no ETag
J=$WORK/json		# nginx JSON index (size, mtime), with ETag
mkdir -p "$P" "$J"
mkfile "$P/p1.bin" $((1 << 20))
mkfile "$P/p2.bin" 300001
mkfile "$P/m1.bin" $((1 << 20))
mkfile "$P/m2.bin" 524288
mkfile "$P/c1.bin" $((8 << 20))
printf 'm1.bin 1000\nm2.bin 2000000\n' >"$P/manifest.txt"
for f in j1 j2 j3 t1 t2 t3; do mkfile "$J/$f.bin" $((1 << 20)); done
mkdir -p "$J/sub"
for i in $(seq 40); do : >"$J/sub/file-with-a-long-name-$i.dat"; done
cp "$P/c1.bin" "$WORK/c1.v1"
cp "$J/j1.bin" "$WORK/j1.v1"
fd_start UP "$P" --no-etag --plain-index
fd_start UJ "$J" --json-index

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
sleep 1.1
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

# ---- 4. total deadline per request ----------------------------------------
M=$WORK/mnt-deadline
pf_mount_ready "$UJ/" "$M" -o "$SMALL,timeout=3,retries=1,request_timeout=4" || exit 1
fault "$UJ" 'path=/t1.bin&method=GET&mode=trickle:2&count=inf'
fault "$UJ" 'path=/t2.bin&method=GET&mode=endless:500&count=inf'
r=$(rd1 "$M" "$M/t1.bin" 0 $K64 "$J/t1.bin")
echo "  trickle: $r"
check "[deadline] a body trickled at 2 B/s: EIO" grep -q '^errno 5 ' <<<"$r"
check "[deadline] ... within 2 x request_timeout=4 (the kernel reads a failed page again) and a margin (${r##* } s)" \
	python3 -c "import sys; sys.exit(not float('${r##* }') < 13)"
r=$(rd1 "$M" "$M/t2.bin" 0 $K64 "$J/t2.bin")
echo "  endless error body: $r"
check "[deadline] an error body without end: EIO" grep -q '^errno 5 ' <<<"$r"
check "[deadline] ... within 2 x request_timeout=4 (the kernel reads a failed page again) and a margin (${r##* } s)" \
	python3 -c "import sys; sys.exit(not float('${r##* }') < 13)"
fault "$UJ" 'path=/sub/&method=GET&mode=trickle:2&count=inf'
r=$(guard "$M" 40 python3 -c 'import os, sys, time
t = time.monotonic()
try:
    os.listdir(sys.argv[1])
    r = "listed"
except OSError as e:
    r = "errno %d" % e.errno
print("%s %.1f" % (r, time.monotonic() - t))' "$M/sub")
echo "  listing trickled: $r"
check "[deadline] a directory index trickled at 2 B/s: ls fails with EIO" grep -q '^errno 5 ' <<<"$r"
check "[deadline] ... within request_timeout=4 and a margin (${r##* } s)" \
	python3 -c "import sys; sys.exit(not float('${r##* }') < 10)"
check "[deadline] the mount still serves another file" guard "$M" 40 cmp "$M/t3.bin" "$J/t3.bin"
check "[deadline] the daemon said why" grep -q 'request_timeout' "$WORK/daemon.mnt-deadline.log"
reset "$UJ"

# ---- 5. S3 listings bounded -------------------------------------------------
S3O="endpoint=$UP,no_sign,addressing=path,region=us-east-1,max_memory=64M"
fault "$UP" 'path=/bkt&mode=s3_list:0&count=inf'
M=$WORK/mnt-s3loop
pf_mount_ready s3://bkt "$M" -o "$S3O" || exit 1
r=$(guard "$M" 40 python3 -c 'import os, sys
try:
    print(len(os.listdir(sys.argv[1])))
except OSError as e:
    print("errno", e.errno)' "$M/d")
check "[listing] a repeated continuation token: ls fails with EIO ($r)" test "$r" = "errno 5"
check "[listing] the daemon names the repeated token" grep -q 'repeats a continuation token' "$WORK/daemon.mnt-s3loop.log"
check "[listing] the mount still lists its root" guard "$M" 40 test -e "$M/k"
reset "$UP"
fault "$UP" 'path=/bkt&mode=s3_list:1&count=inf'
M=$WORK/mnt-s3big
pf_mount_ready s3://bkt "$M" -o "$S3O" || exit 1
r=$(guard "$M" 60 python3 -c 'import os, sys
try:
    print(len(os.listdir(sys.argv[1])))
except OSError as e:
    print("errno", e.errno)' "$M/d")
check "[listing] a listing without end: ENOMEM past max_memory/4 ($r)" test "$r" = "errno 12"
check "[listing] the daemon says which limit" grep -q 'more than 16 MiB' "$WORK/daemon.mnt-s3big.log"
check "[listing] the mount still lists its root" guard "$M" 40 test -e "$M/k"
check "[listing] the daemon is still up" test -n "$(pf_pid "$M")"
reset "$UP"

# ---- 6. opens without round trips ---------------------------------------------
# (the root is listed at mount: revalidate runs from before pf_mount_ready; 12 s
# leave room for a slow machine between the listing and the reopen of j2,
# about 2 s on an idle one)
M=$WORK/mnt-json
t0=$(date +%s.%N)
pf_mount_ready "$UJ/" "$M" -o "$SMALL,revalidate=12" || exit 1
guard "$M" 40 ls -l "$M" >/dev/null
reset "$UJ"
check "[revalidate] j2.bin reads whole" guard "$M" 40 cmp "$M/j2.bin" "$J/j2.bin"
r=$(rd1 "$M" "$M/j1.bin" 0 $K64 "$WORK/j1.v1")
check "[revalidate] j1.bin's first 64K ($r)" grep -q '^ok ' <<<"$r"
n=$(nlog "$UJ" 'len(H("j1.bin")) + len(H("j2.bin"))')
check "[revalidate] opens of listed files made no HEAD ($n)" test "$n" = 0
n=$(nlog "$UJ" 'len(G("j1.bin")) > 0 and len(G("j2.bin")) > 0')
check "[revalidate] ... and read with GETs" test "$n" = True
cp "$J/j2.bin" "$WORK/j2.v1"
sleep 1.1
curl -sf "$UJ/_replace?path=/j1.bin" >/dev/null || fail "replacing j1.bin"
curl -sf "$UJ/_replace?path=/j2.bin" >/dev/null || fail "replacing j2.bin"
r=$(rd1 "$M" "$M/j1.bin" $((512 << 10)) $K64 "$WORK/j1.v1" "$J/j1.bin")
check "[revalidate] j1.bin replaced, within revalidate: EIO, not new bytes ($r)" grep -q '^errno 5 ' <<<"$r"
check "[revalidate] j1.bin: the next open (the change was seen) reads the new bytes" guard "$M" 40 cmp "$M/j1.bin" "$J/j1.bin"
n=$(nlog "$UJ" 'len(H("j1.bin"))')
check "[revalidate] ... after a HEAD ($n)" test "$n" = 1
check "[revalidate] j2.bin replaced, reopened within revalidate: its cached old bytes" \
	guard "$M" 40 cmp "$M/j2.bin" "$WORK/j2.v1"
n=$(nlog "$UJ" 'len(H("j2.bin"))')
check "[revalidate] ... without a HEAD ($n)" test "$n" = 0
el=$(python3 -c "print('%.1f' % ($(date +%s.%N) - $t0))")
check "[revalidate] (that reopen came ${el} s after the listing, within 12 s)" \
	python3 -c "import sys; sys.exit(not $el < 12)"
sleep "$(python3 -c "print(max(0, 13 - ($(date +%s.%N) - $t0)))")"
check "[revalidate] after revalidate= an open reads the new j2.bin" guard "$M" 40 cmp "$M/j2.bin" "$J/j2.bin"
n=$(nlog "$UJ" 'len(H("j2.bin"))')
check "[revalidate] ... after a HEAD ($n)" test "$n" = 1
M=$WORK/mnt-json0
pf_mount_ready "$UJ/" "$M" -o "$SMALL,revalidate=0" || exit 1
guard "$M" 40 ls -l "$M" >/dev/null
reset "$UJ"
check "[revalidate=0] j3.bin reads whole" guard "$M" 40 cmp "$M/j3.bin" "$J/j3.bin"
n=$(nlog "$UJ" 'len(H("j3.bin"))')
check "[revalidate=0] the open made a HEAD ($n)" test "$n" = 1

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
