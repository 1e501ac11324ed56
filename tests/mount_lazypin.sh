#!/bin/bash
# Lazy pins: over an index that gives exact sizes but no version (nginx's
# HTML autoindex, as tests/helpers/faultd.py writes it), an open answers
# from the listing without a request and the first ranged GET's answer
# pins the version.  Against faultd (its request log tells what the daemon
# asked) and nginx (its access log):
#   1. an open and a whole read make no HEAD; every GET after the first
#      carries If-Match with the file's ETag
#   2. the file replaced by one of the same size (new ETag) between the
#      open and its first read: the reader gets the new bytes, all of them
#   3. replaced by one of another size: EIO, never bytes; the next open
#      makes a HEAD and reads the new file whole
#   4. replaced (same size) after the first read: the later reads of that
#      open get EIO, never other bytes
#   5. deleted after the listing: the read fails, the next open ENOENT
#   9. replaced while the first GETs (none with If-Match yet) are in
#      flight: bytes of one version, EIO for the rest, never a mix
#   8. the first GET cut short: resumed from the first missing byte with
#      If-Match of the version its headers pinned
#   6. revalidate=0 and cache_dir keep the HEAD at open
#   7. nginx (the benchmark's server), read-ahead on: no HEAD at all
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
. "$(dirname "$0")/objstore_common.sh"
need_fuse
need_tools

SRC=$WORK/src
mkdir -p "$SRC"
for f in a s g u x c r; do mkfile "$SRC/$f.bin" $((8 << 20)); done
mkfile "$SRC/w.bin" $((32 << 20))
for f in s g u w; do cp "$SRC/$f.bin" "$WORK/$f.v1"; done
faultd_start "$SRC" >/dev/null || { fail "faultd"; finish; }
U=$FAULTD_URL

# lazy.py MODE FILE SRCFILE URL: open FILE, check that the open asked
# nothing, change SRCFILE at the server (MODE), read; prints words
cat >"$WORK/lazy.py" <<'PY'
import json, os, sys, urllib.request
mode, f, src, u = sys.argv[1:5]
name = "/" + os.path.basename(src)
def asked():
    log = urllib.request.urlopen(u + "/_log").read().decode()
    return [json.loads(l) for l in log.splitlines() if l.strip()
            and json.loads(l)["path"] == name]
old = open(src, "rb").read()
fd = os.open(f, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
print("open-requests", len(asked()))
def rd(off, n):
    try:
        b = os.pread(fd, n, off)
    except OSError as e:
        return None, "errno %d" % e.errno
    return b, None
if mode == "same":
    urllib.request.urlopen(u + "/_replace?path=" + name).read()
    new = open(src, "rb").read()
    got = bytearray()
    err = None
    while len(got) < len(old):
        b, err = rd(len(got), 1 << 20)
        if err or not b:
            break
        got += b
    print("read", err if err else
          "new" if bytes(got) == new else "old" if bytes(got) == old
          else "MIXED")
elif mode == "size":
    with open(src + ".tmp", "wb") as o:
        o.write(os.urandom(len(old) + 12345))
    os.replace(src + ".tmp", src)
    b, err = rd(0, 65536)
    print("read", err if err else "BYTES")
elif mode == "mid":
    b, err = rd(0, 65536)
    print("first", err if err else "ok" if b == old[:65536] else "wrong")
    urllib.request.urlopen(u + "/_replace?path=" + name).read()
    for off in (4 << 20, 6 << 20):
        b, err = rd(off, 65536)
        new = bytes(x ^ 0xA5 for x in old[off:off + 65536])
        print(off, err if err else "OLD" if b == old[off:off + 65536]
              else "NEW" if b == new else "MIXED")
elif mode == "gone":
    os.unlink(src)
    b, err = rd(0, 65536)
    print("read", err if err else "BYTES")
PY
lazy() { guard "$M" 60 python3 "$WORK/lazy.py" "$1" "$M/$2" "$SRC/$2" "$U"; }

M=$WORK/mnt
pf_mount_ready "$U/" "$M" -o "$SMALL" || { fail "mount of $U/"; finish; }
guard "$M" 40 ls -l "$M" >/dev/null || fail "ls -l"

# ---- 1. no HEAD ---------------------------------------------------------------
etag=$(curl -sI "$U/a.bin" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
reset "$U"
check "1. a.bin reads whole" guard "$M" 40 cmp "$M/a.bin" "$SRC/a.bin"
check "1. the open made no HEAD ($(nlog "$U" 'len(H("a.bin"))') HEADs)" \
	test "$(nlog "$U" 'len(H("a.bin"))')" = 0
check "1. the GETs after the first carry If-Match $etag ($(nlog "$U" '[e["if_match"] for e in G("a.bin")][:4]')...)" \
	test "$(nlog "$U" "len(G('a.bin')) > 8 and all(e['if_match'] in (None, '$etag') for e in G('a.bin')) and [e['if_match'] for e in G('a.bin')][-4:] == ['$etag'] * 4")" = True
reset "$U"
check "1. a second open reads whole" guard "$M" 40 cmp "$M/a.bin" "$SRC/a.bin"
check "1. ... and makes no HEAD" test "$(nlog "$U" 'len(H("a.bin"))')" = 0

# ---- 2. same size, replaced before the first read -------------------------------
reset "$U"
r=$(lazy same s.bin)
echo "$r" | sed 's/^/  /'
check "2. the open asked nothing" grep -q '^open-requests 0$' <<<"$r"
check "2. replaced (same size) before the first read: the new bytes, all of them" \
	grep -q '^read new$' <<<"$r"

# ---- 3. another size, replaced before the first read ------------------------------
reset "$U"
r=$(lazy size g.bin)
echo "$r" | sed 's/^/  /'
check "3. the open asked nothing" grep -q '^open-requests 0$' <<<"$r"
check "3. replaced (another size) before the first read: EIO" \
	grep -q '^read errno 5$' <<<"$r"
check "3. the daemon logged the change" grep -q "g.bin.*changed on the server (size" "$WORK/daemon.mnt.log"
reset "$U"
check "3. the next open reads the new file whole" guard "$M" 40 cmp "$M/g.bin" "$SRC/g.bin"
check "3. ... after a HEAD" test "$(nlog "$U" 'len(H("g.bin"))')" = 1

# ---- 4. replaced after the first read ----------------------------------------------
reset "$U"
r=$(lazy mid u.bin)
echo "$r" | sed 's/^/  /'
check "4. the first read is of the first version" grep -q '^first ok$' <<<"$r"
check "4. reads after the replacement: EIO, never other bytes" \
	test "$(grep -c ' errno 5$' <<<"$r")" = 2
check "4. the GETs after the first carried If-Match" \
	test "$(nlog "$U" 'len(G("u.bin")) >= 3 and G("u.bin")[0]["if_match"] is None and all(e["if_match"] for e in G("u.bin")[1:])')" = True

# ---- 8. the first GET cut short: resumed pinned --------------------------------------
reset "$U"
etag=$(curl -sI "$U/r.bin" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
reset "$U"
fault "$U" "path=/r.bin&method=GET&mode=cut:20000&count=1"
r=$(rd1 "$M" "$M/r.bin" 0 $K64 "$SRC/r.bin")
check "8. the first GET cut at 20000: the pread is byte-exact ($r)" grep -q '^ok ' <<<"$r"
check "8. ... resumed at 20000 with If-Match $etag ($(nlog "$U" '[(e["asked"], e["if_match"]) for e in G("r.bin")]'))" \
	test "$(nlog "$U" "sorted((e['asked'][0], e['if_match']) for e in G('r.bin')) == [(0, None), (20000, '$etag')]")" = True

# ---- 5. deleted after the listing ----------------------------------------------------
reset "$U"
r=$(lazy gone x.bin)
echo "$r" | sed 's/^/  /'
check "5. deleted after the listing: the read fails" grep -qE '^read errno (2|5)$' <<<"$r"
r=$(guard "$M" 40 python3 -c 'import os, sys
try:
    os.close(os.open(sys.argv[1], os.O_RDONLY)); print("opened")
except OSError as e:
    print("errno", e.errno)' "$M/x.bin")
check "5. the next open: ENOENT ($r)" test "$r" = "errno 2"
pf_umount "$M" || fail "unmount"

# ---- 9. replaced while the first GETs (no If-Match yet) are in flight -----------------
# (read-ahead on: the first READ sends several GETs at once, before any
# answer pinned the version; faultd replaces the file after answering one)
M=$WORK/mnt9
pf_mount_ready "$U/" "$M" || { fail "mount of $U/ (read-ahead on)"; finish; }
reset "$U"
fault "$U" "path=/w.bin&mode=replace_after:1"
r=$(guard "$M" 60 python3 - "$M/w.bin" "$WORK/w.v1" <<'PY'
import os, sys
f, ref = sys.argv[1:3]
old = open(ref, "rb").read()
new = bytes(x ^ 0xA5 for x in old)
got, err = bytearray(), None
fd = os.open(f, os.O_RDONLY)
while True:
    try:
        b = os.read(fd, 1 << 20)
    except OSError as e:
        err = e.errno
        break
    if not b:
        break
    got += b
g = bytes(got)
v = "old" if old.startswith(g) else "new" if new.startswith(g) else "MIXED"
print("read", len(g), "bytes of", len(old), "all", v, "errno", err)
PY
)
# (how many GETs went without If-Match depends on the timing: usually
# the whole first window, so their answers are checked against the pin)
echo "  $r (GETs without If-Match: $(nlog "$U" 'sum(1 for e in G("w.bin") if not e["if_match"])'))"
check "9. replaced during the first GETs: one version's bytes, EIO for the rest" \
	grep -qE '^read ([0-9]+ bytes of [0-9]+ all (old|new) errno 5|33554432 bytes of 33554432 all (old|new) errno None)$' <<<"$r"
pf_umount "$M" || fail "unmount"

# ---- 6. revalidate=0, cache_dir: the HEAD stays ----------------------------------------
for o in revalidate=0 "cache_dir=$WORK/cache,cache_size=16M"; do
	M=$WORK/mnt6
	pf_mount_ready "$U/" "$M" -o "$SMALL,$o" || { fail "mount -o $o"; finish; }
	reset "$U"
	check "6. -o ${o%%,*}: c.bin reads whole" guard "$M" 40 cmp "$M/c.bin" "$SRC/c.bin"
	check "6. -o ${o%%,*}: its open made a HEAD" test "$(nlog "$U" 'len(H("c.bin"))')" = 1
	pf_umount "$M" || fail "unmount"
done

# ---- 7. nginx, read-ahead on -----------------------------------------------------------
N=$WORK/nsrc
mkdir -p "$N"
for i in 1 2 3 4; do mkfile "$N/f$i.bin" $((20 << 20)); done
nginx_start "$N" >/dev/null || { fail "nginx"; finish; }
M=$WORK/mnt7
pf_mount_ready "$NGINX_URL" "$M" || { fail "mount of nginx"; finish; }
n=$(wc -l <"$NGINX_DIR/access.log")
for i in 1 2 3 4; do
	guard "$M" 40 cmp "$M/f$i.bin" "$N/f$i.bin" &
done
rc=0
for i in 1 2 3 4; do wait -n || rc=1; done
check "7. nginx: four files read at once, byte-exact" test $rc = 0
tail -n +"$((n + 1))" "$NGINX_DIR/access.log" >"$WORK/log7"
check "7. nginx: no HEAD ($(grep -c '"HEAD ' "$WORK/log7") in its log, $(grep -c '"GET /f' "$WORK/log7") GETs)" \
	[ "$(grep -c '"HEAD ' "$WORK/log7")" -eq 0 ]
pf_umount "$M" || fail "unmount"

finish
