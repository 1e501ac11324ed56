#!/bin/bash
# The shared cache tier (-o shared_cache, docs/shared-cache.md): two
# memcached servers on their own addresses (127.0.0.2, 127.0.0.3) and one
# origin (nginx, whose access log counts the GETs of file data).  Every
# read is compared with the source byte for byte.
#   1. a tree read through mount A, then through mount B (another node):
#      B reads it without one GET of file data, every piece a hit; the
#      stats and prefetchfs-stat show it
#   2. values forged with memcached's own text protocol under the tier's
#      keys (random bytes; one piece's value under another piece's key):
#      never served, counted as dropped, those pieces read from nginx
#   3. B with another secret: nothing of A's is served, every byte exact
#   4. no secret, a secret others may read, a short one: the mount is
#      refused with one line
#   5. the whole stack, a disk cache over the tier: a node with cache_dir
#      reads A's tree from the tier (no GET), its disk cache keeps it, and
#      its remount reads it from local disk (no look-up in the tier)
#   6. a file replaced at the origin by one of the same size within the
#      same minute (nginx's HTML index gives minutes): the next node reads
#      the new bytes, never the tier's pieces of the old version
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

SRC=$WORK/src
mkdir -p "$SRC/d"
mkfile "$SRC/big.bin" $((5 << 20))
mkfile "$SRC/odd.bin" 1234567
for i in $(seq 1 8); do
	mkfile "$SRC/d/s$i.jpg" $((90 * 1024 + i))
done
mkfile "$SRC/d/tiny" 100
TOTAL=$(find "$SRC" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')

memcached_start 127.0.0.2 >/dev/null || { fail "memcached 1"; finish; }
MC1=$MC_SERVER
memcached_start 127.0.0.3 >/dev/null || { fail "memcached 2"; finish; }
MC2=$MC_SERVER
nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
SECRET=$WORK/secret
tier_secret "$SECRET"
# a generous timeout: a loaded machine (sanitizers, parallel tests) must
# not turn a slow answer into a GET this test counts
OPTS="shared_cache=$MC1,$MC2,shared_secret=$SECRET,shared_timeout=1000"

# wait_stored MNT BYTES: the tier has stored BYTES of MNT's reads (10 s)
wait_stored() { stats_wait "$1" "sc['bytes_stored'] >= $2" sc; }

# ---- 1. A, then B ------------------------------------------------------------

A=$WORK/a
pf_mount_ready "$NGINX_URL" "$A" -o "$OPTS,shared_self=$MC1" || { fail "mount A"; finish; }
check "A: byte-exact" all_same "$A"
check "A: every piece stored in the tier" wait_stored "$A" "$TOTAL"
stats_check "A: both servers answer, A knows its own" "$A" "sc['servers'] == 2 and sc['servers_up'] == 2 and sc['self'] == '$MC1'"
stats_check "A: read from nginx, nothing dropped" "$A" "sc['pieces_missed'] > 0 and sc['bytes_fetched'] >= $TOTAL and sc['dropped'] == 0 and sc['errors'] == 0"
pf_umount "$A" || fail "unmount A"

before=$(data_gets)
B=$WORK/b
pf_mount_ready "$NGINX_URL" "$B" -o "$OPTS,shared_self=$MC2" || { fail "mount B"; finish; }
check "B: byte-exact" all_same "$B"
after=$(data_gets)
echo "GETs of file data: A $before, B $((after - before))"
check "B: no GET of file data reached nginx" [ "$after" -eq "$before" ]
stats_check "B: every piece from the tier" "$B" "sc['pieces_missed'] == 0 and sc['misses'] == 0 and sc['hits'] > 0 and sc['bytes_hit'] >= $TOTAL"
echo "B: $(stats_eval "$B" sc)"
COLUMNS=80 "$TOP/prefetchfs-stat" -n 1 "$B" >"$WORK/stat.txt" 2>&1
check "prefetchfs-stat: the tier's line" grep -qE "^shared +100.0 +6.9M" "$WORK/stat.txt"
check "prefetchfs-stat: its servers" grep -q "^  servers 2 of 2 up, 0 ejected (0 ejections, 0 slow)   errors 0, timeouts 0$" "$WORK/stat.txt"
check "prefetchfs-stat: its leases and the fill" grep -q "^  leases won 0, waited 0, timed out 0   fill from peers 0$" "$WORK/stat.txt"
grep -A3 "^shared " "$WORK/stat.txt"
pf_umount "$B" || fail "unmount B"

# ---- 2. forged values ----------------------------------------------------------

# on each server: the first data key gets random bytes of its value's
# length, the second the value of the third (replayed under another key)
forge() {
	python3 - "$1" <<'PY'
import os, re, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
def talk(req, end=b"END\r\n"):
    s = socket.create_connection((host, int(port)), timeout=5)
    s.sendall(req)
    buf = b""
    while not buf.endswith(end):
        d = s.recv(1 << 20)
        if not d:
            break
        buf += d
    s.close()
    return buf
dump = talk(b"lru_crawler metadump all\r\n").decode()
keys = [(m.group(1), int(m.group(2))) for m in
        re.finditer(r"key=(D[0-9a-f]{64}) .*?size=(\d+)", dump)]
if len(keys) < 3:
    sys.exit("only %d keys" % len(keys))
def get(k):
    v = talk(b"get %s\r\n" % k.encode())
    head, rest = v.split(b"\r\n", 1)
    n = int(head.split()[3])
    return rest[:n]
def put(k, v):
    assert talk(b"set %s 0 0 %d\r\n" % (k.encode(), len(v)) + v + b"\r\n",
                b"\r\n").startswith(b"STORED")
put(keys[0][0], os.urandom(len(get(keys[0][0]))))
put(keys[1][0], get(keys[2][0]))
print(2)
PY
}
n1=$(forge "$MC1") && n2=$(forge "$MC2") || fail "forging values in memcached"
FORGED=$(( ${n1:-0} + ${n2:-0} ))
before=$(data_gets)
C=$WORK/c
pf_mount_ready "$NGINX_URL" "$C" -o "$OPTS" || { fail "mount C"; finish; }
check "forged values: every byte exact" all_same "$C"
after=$(data_gets)
stats_check "forged values: all $FORGED dropped, never served" "$C" "sc['dropped'] == $FORGED and sc['pieces_missed'] == $FORGED"
check "forged values: their pieces came from nginx ($((after - before)) GETs)" [ "$after" -gt "$before" ]
echo "C: $(stats_eval "$C" sc)"
pf_umount "$C" || fail "unmount C"

# ---- 3. another secret -----------------------------------------------------------

OTHER=$WORK/other
head -c 32 /dev/urandom >"$OTHER"
chmod 400 "$OTHER"
before=$(data_gets)
D=$WORK/d
pf_mount_ready "$NGINX_URL" "$D" -o "shared_cache=$MC1,$MC2,shared_secret=$OTHER,shared_timeout=1000" || { fail "mount D"; finish; }
check "another secret: every byte exact" all_same "$D"
after=$(data_gets)
stats_check "another secret: nothing of A's served" "$D" "sc['pieces_hit'] == 0 and sc['bytes_hit'] == 0 and sc['bytes_fetched'] >= $TOTAL"
check "another secret: every file from nginx ($((after - before)) GETs)" [ $((after - before)) -ge 11 ]
pf_umount "$D" || fail "unmount D"

# ---- 4. refused ----------------------------------------------------------------

E=$WORK/e
mkdir -p "$E"
not_mounted() { ! mountpoint -q "$1"; }
refused() { # refused "what" MESSAGE-PART OPTIONS
	"$PF" -o "$3" "$NGINX_URL" "$E" >"$WORK/refused.out" 2>&1
	local rc=$?
	if [ $rc -ne 0 ] && one_line_err "$WORK/refused.out" &&
		grep -q -- "$2" "$WORK/refused.out" && not_mounted "$E"; then
		ok "$1: refused with one line"
	else
		fail "$1: refused with one line (exit $rc)"
		cat "$WORK/refused.out"
	fi
}
refused "no secret" "needs -o shared_secret" "shared_cache=$MC1"
cp "$SECRET" "$WORK/open"
chmod 644 "$WORK/open"
refused "a secret others may read" "readable by group or others" "shared_cache=$MC1,shared_secret=$WORK/open"
printf 'short\n' >"$WORK/short"
chmod 600 "$WORK/short"
refused "a short secret" "at least 16" "shared_cache=$MC1,shared_secret=$WORK/short"
refused "a missing secret" "No such file" "shared_cache=$MC1,shared_secret=$WORK/nothing"
refused "a bad server" "bad value for shared_cache" "shared_cache=$MC1:x,shared_secret=$SECRET"
refused "shared_self not in the list" "not in the shared_cache list" "shared_cache=$MC1,shared_secret=$SECRET,shared_self=127.0.0.9:1"

# ---- 5. the disk cache over the tier ---------------------------------------------

F=$WORK/f
FOPTS="$OPTS,cache_dir=$WORK/fcache,cache_size=64M"
before=$(data_gets)
pf_mount_ready "$NGINX_URL" "$F" -o "$FOPTS" || { fail "mount F"; finish; }
check "disk cache over the tier: byte-exact" all_same "$F"
stats_check "disk cache over the tier: the tier served what the disk cache missed" "$F" "c['misses'] > 0 and sc['pieces_hit'] > 0 and sc['pieces_missed'] == 0"
for ((i = 0; i < 100; i++)); do
	[ "$(stats_eval "$F" "c['bytes_cached'] >= $TOTAL")" = True ] && break
	sleep 0.1
done
pf_umount "$F" || fail "unmount F"
pf_mount_ready "$NGINX_URL" "$F" -o "$FOPTS" || { fail "remount F"; finish; }
check "remount: byte-exact" all_same "$F"
stats_check "remount: every read from local disk, none from the tier" "$F" "c['hits'] > 0 and c['misses'] == 0 and sc['hits'] + sc['misses'] == 0"
after=$(data_gets)
check "the stack: no GET of file data ($((after - before)))" [ "$after" -eq "$before" ]
pf_umount "$F" || fail "unmount F"

# ---- 6. a file replaced at the origin ---------------------------------------------

past_mtime "$SRC/odd.bin"
mkfile "$WORK/odd.v2" 1234567
cat "$WORK/odd.v2" >"$SRC/odd.bin"	# the same size, a later second
G=$WORK/g
pf_mount_ready "$NGINX_URL" "$G" -o "$OPTS" || { fail "mount G"; finish; }
check "replaced at the origin: the new bytes" cmp -s "$SRC/odd.bin" "$G/odd.bin"
check "replaced at the origin: the rest byte-exact" all_same "$G"
pf_umount "$G" || fail "unmount G"
finish
