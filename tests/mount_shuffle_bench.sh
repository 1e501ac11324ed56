#!/bin/bash
# The shuffled-training benchmark cannot rot: bench/shuffle.sh --smoke (a
# tree of 40 files behind a 50 ms / 64 MiB/s store, PyTorch trainers,
# epochs 1, 2 and after a remount, and the tree at twice a disk cache) runs
# to the end and exits 0, which it does only if every trainer's digest
# equals the local copy's, and
#  - writes shuffle.md and shuffle.tsv;
#  - every system this build has (local, prefetchfs; cache_dir if
#    ./prefetchfs --help lists it; hints if examples/prefetchfs_hints.py
#    exists; rclone if installed) has numbers for the tree in epochs 1, 2
#    and "remount": data wait within 0..100 %, MB/s > 0, bytes "ok"; a
#    mount also the store's requests and, for a daemon, CPU seconds and a
#    peak RSS; cache_dir also a disk-cache hit rate in epoch 2 of the data
#    set twice its cache; a system this build lacks has a row saying so;
#  - prefetchfs reads the store with nginx's JSON index (size and mtime:
#    an open needs no HEAD), so its epoch 1 of the tree takes fewer than
#    1.5 requests per file (the HTML index, rclone's, costs 2); rclone
#    reading the HTML index is what makes its rows there at all;
#  - a bad argument is one error line and exit 2.
# Timing is not asserted: the machine is shared.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$MKDATA" "$TOP/bench/delayproxy"
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	fail "/usr/bin/python3 cannot import torch (tests/deps.sh installs python3-torch)"
	finish
fi

OUT=$WORK/results
out=$WORK/shuffle.out
t0=$(date +%s)
if timeout -k 10 300 "$TOP/bench/shuffle.sh" --smoke --out "$OUT" >"$out" 2>&1; then
	ok "bench/shuffle.sh --smoke ran in $(($(date +%s) - t0)) s"
else
	fail "bench/shuffle.sh --smoke failed; its output ends:"
	tail -40 "$out"
	finish
fi
check "shuffle.md has the tree's table" grep -q '^## shuffled file tree$' "$OUT/shuffle.md"

avail=local,prefetchfs
[[ $("$PF" --help 2>&1) == *cache_dir* ]] && avail=$avail,cache_dir
[ -f "$TOP/examples/prefetchfs_hints.py" ] && avail=$avail,hints
command -v rclone >/dev/null && avail=$avail,rclone

if python3 - "$OUT/shuffle.tsv" "$avail" >"$WORK/py.out" 2>&1 <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
head, rows = rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]
avail = sys.argv[2].split(",")
bad = 0
def num(v):
    try:
        return float(v)
    except ValueError:
        return None
for s in ["local", "prefetchfs", "cache_dir", "hints", "rclone"]:
    mine = [r for r in rows if r["system"] == s and r["trainer"] == "tree"]
    if s not in avail or (s == "hints" and len(mine) == 1 and "no .prefetchfs/plan" in mine[0]["note"]):
        if len(mine) != 1 or not mine[0]["note"].startswith(("not built", "not installed")):
            print("%s: expected one row saying it is not there: %s" % (s, mine)); bad += 1
        else:
            print("%s: %s" % (s, mine[0]["note"]))
        continue
    for ep in ("1", "2", "remount"):
        m = [r for r in mine if r["epoch"] == ep]
        if len(m) != 1:
            print("%s epoch %s: %d rows" % (s, ep, len(m))); bad += 1; continue
        r = m[0]
        w, mb = num(r["wait_pct"]), num(r["mb_s"])
        good = w is not None and 0 <= w <= 100 and mb and mb > 0 and r["bytes"] == "ok"
        if s != "local":
            good = good and num(r["requests"]) is not None
        if s in ("prefetchfs", "cache_dir", "hints", "rclone"):
            good = good and num(r["cpu_s"]) is not None and (num(r["rss_mib"]) or 0) > 0
        if not good:
            print("bad numbers:", r); bad += 1
        if s == "prefetchfs" and ep == "1" and not (num(r["requests"]) or 1e9) < 1.5 * 40:
            print("prefetchfs epoch 1: %s requests for 40 files: a HEAD per open?" % r["requests"])
            bad += 1
    if s == "cache_dir":
        m = [r for r in rows if r["system"] == s and r["trainer"] == "twice" and r["epoch"] == "2"]
        if len(m) != 1 or num(m[0]["hit_rate"]) is None:
            print("cache_dir: no hit rate for epoch 2 of the data set twice the cache:", m); bad += 1
print("%d rows checked, %d bad" % (len(rows), bad))
sys.exit(1 if bad else 0)
PY
then
	ok "numbers for every system there is ($avail): $(tail -1 "$WORK/py.out")"
else
	fail "rows of shuffle.tsv:"
	cat "$WORK/py.out"
fi

"$TOP/bench/shuffle.sh" --systems nfs >"$WORK/bad.out" 2>&1
rc=$?
check "a bad --systems value: exit 2 (got $rc) and one error line" \
	bash -c '[ "$1" -eq 2 ] && [ "$(wc -l <"$2")" -eq 1 ] && grep -q "unknown value .nfs." "$2"' _ "$rc" "$WORK/bad.out"
finish
