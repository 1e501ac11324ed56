#!/bin/bash
# One look-up in the shared tier per file a reader reads (issue 30,
# bench/tierfile.sh): 600 files of 64 KiB in 10 directories, read through
# mount A (every file stored in the tier), then through mount B by one
# reader in a shuffled order.  B's tier counts as many look-ups (keys
# asked, pieces hit) as files read: the read-ahead across files asks for
# none the reader already read (a shuffled reader follows in name order
# now and then by chance; a file it read and whose block is gone was read
# ahead again: 640-660 look-ups for 600 files).  About 13 s.  Every byte compared.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

N=600
SRC=$WORK/src
python3 "$TOP/bench/mktree.py" "$SRC/tree" $N 64K >/dev/null || { fail "mktree"; finish; }
memcached_start 127.0.0.2 >/dev/null || { fail "memcached"; finish; }
nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
SECRET=$WORK/secret
tier_secret "$SECRET"
OPTS="max_memory=32M,shared_cache=$MC_SERVER,shared_secret=$SECRET,shared_timeout=1000"

# shuffled MNT SEED: reads every file of MNT/tree once, in a shuffled
# order, each compared with the source
shuffled() {
	python3 - "$1/tree" "$SRC/tree" "$2" <<'PY'
import os, random, sys
root, src, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = sorted(os.path.relpath(os.path.join(dp, f), src)
               for dp, _, fs in os.walk(src) for f in fs)
random.Random(seed).shuffle(names)
bad = 0
for n in names:
    with open(os.path.join(root, n), "rb") as f, \
         open(os.path.join(src, n), "rb") as g:
        bad += f.read() != g.read()
sys.exit(1 if bad else 0)
PY
}

A=$WORK/a
pf_mount_ready "$NGINX_URL" "$A" -o "$OPTS" >/dev/null || { fail "mount A"; finish; }
check "A: byte-exact, shuffled" shuffled "$A" 1
stored=false
for ((i = 0; i < 100; i++)); do
	[ "$(stats_eval "$A" "sc['stored'] >= $N")" = True ] && { stored=true; break; }
	sleep 0.1
done
check "A: every file stored in the tier" $stored
pf_umount "$A"

B=$WORK/b
pf_mount_ready "$NGINX_URL" "$B" -o "$OPTS" >/dev/null || { fail "mount B"; finish; }
check "B: byte-exact, another shuffled order" shuffled "$B" 21
# (2 % allowed: a file read ahead whose block is evicted before its reader
# comes is looked up again, on a loaded machine)
stats_check "B: one look-up per file read ($N, 2 % more at most)" "$B" \
	"$N <= sc['mget_keys'] <= $((N + N / 50)) and sc['pieces_hit'] >= $N and sc['pieces_missed'] == 0"
stats_eval "$B" "'  B: hits %d, keys %d, multi-gets %d, files read %d' % (sc['hits'], sc['mget_keys'], sc['mgets'], $N)"
pf_umount "$B"
finish
