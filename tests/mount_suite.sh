#!/bin/bash
# The comparative benchmark cannot rot: bench/suite.sh --smoke (about a
# minute: every store at 5 and 50 ms, every system, the seq workload, the
# max_inflight sweep at 1 and 8) runs to the end and
#  - writes suite.md with a table per store and latency, suite.tsv with a
#    row for every store x latency x system, and the two PNG plots;
#  - every system that can read a store has numbers in its row: data wait
#    within 0..100 %, MB/s > 0, amplification >= 0.95 (the store's byte
#    counter saw at least the bytes read: nothing reads these files from a
#    cache between rows), and for a FUSE daemon CPU seconds, CPU seconds
#    per GiB and a peak RSS; a system that cannot has a row saying why;
#    the local floor has a wait and MB/s (no store bytes, no daemon);
#  - the max_inflight sweep has a number for each value and store;
#  - a bad argument is one error line and exit 2.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$SLOWFS" "$TRAINER" "$MKDATA" "$TOP/bench/delayproxy"

OUT=$WORK/results
out=$WORK/suite.out
if timeout -k 10 240 "$TOP/bench/suite.sh" --smoke --out "$OUT" >"$out" 2>&1; then
	ok "bench/suite.sh --smoke ran ($(grep -c '^\[suite.*\] \[' "$out") rows)"
else
	fail "bench/suite.sh --smoke failed; its output ends:"
	tail -30 "$out"
	finish
fi

check "suite.md written with a table per store and latency (6)" \
	test "$(grep -c '^## .*, [0-9]* ms$' "$OUT/suite.md" 2>/dev/null)" -eq 6
for p in suite-wait-latency.png suite-inflight.png; do
	check "$p is a PNG of more than 5 KB" bash -c \
		'[ "$(head -c 8 "$1" | od -An -tx1 | tr -d " \n")" = 89504e470d0a1a0a ] &&
		 [ "$(stat -c %s "$1")" -gt 5000 ]' _ "$OUT/$p"
done

rc_py() { # WHAT PYTHON-SCRIPT: the script's exit status, its output shown
	local what=$1
	if python3 -c "$2" "$OUT" >"$WORK/py.out" 2>&1; then
		ok "$what: $(tail -1 "$WORK/py.out")"
	else
		fail "$what:"
		cat "$WORK/py.out"
	fi
}

rc_py "a row per store x latency x system, numbers where the system reads the store" '
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1] + "/suite.tsv")]
head, rows = rows[0], rows[1:]
bad = 0
def num(v):
    try:
        return float(v)
    except ValueError:
        return None
systems = ["local", "direct", "prefetchfs", "rclone", "rclone-tuned", "s3fs"]
for store in ["slowfs", "http", "s3"]:
    for lat in ["5", "50"]:
        for s in systems:
            m = [r for r in rows if r[0] == store and r[1] == lat and r[2] == s and r[3] == "seq"]
            if len(m) != 1:
                print("no single row for", store, lat, s, ":", len(m)); bad += 1; continue
            r = dict(zip(head, m[0]))
            can = s != "s3fs" or store == "s3"
            if not can:
                if not r["note"].startswith("n/a: "):
                    print("row without its reason:", m[0]); bad += 1
                continue
            if num(r["wait_pct"]) is None:
                # every system reads every store it supports (s3fs too:
                # tests/s3/s3server.js fixes how s3rver checks its
                # signatures)
                print("no numbers:", m[0]); bad += 1
                continue
            w, mb, amp = num(r["wait_pct"]), num(r["mb_s"]), num(r["amplification"])
            ok = 0 <= w <= 100 and mb and mb > 0
            if s == "local":
                ok = ok and r["amplification"] == "-" and r["cpu_s"] == "-"
            else:
                ok = ok and amp is not None and amp >= 0.95
            daemon = s != "local" and not (store == "slowfs" and s == "direct")
            if daemon:
                ok = (ok and num(r["cpu_s"]) is not None and (num(r["rss_mib"]) or 0) > 0
                      and num(r["cpu_s_per_gib"]) is not None)
            if not ok:
                print("bad numbers:", m[0]); bad += 1
print("%d rows checked, %d bad" % (len(rows), bad))
sys.exit(1 if bad else 0)'

rc_py "max_inflight sweep: MB/s for 1 and 8 on HTTP and S3" '
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1] + "/suite-inflight.tsv")][1:]
got = {(r[0], r[1]): r[2] for r in rows}
bad = [k for k in [(s, n) for s in ("http", "s3") for n in ("1", "8")]
       if not got.get(k, "-").replace(".", "").isdigit() or float(got[k]) <= 0]
print("%d values, missing or zero: %s" % (len(rows), bad or "none"))
sys.exit(1 if bad else 0)'

check "suite.md names every system" bash -c \
	'for s in local direct prefetchfs rclone rclone-tuned s3fs; do grep -q "| $s |" "$1" || exit 1; done' _ "$OUT/suite.md"

"$TOP/bench/suite.sh" --no-deps --stores nfs >"$WORK/bad.out" 2>&1
rc=$?
check "a bad --stores value: exit 2 (got $rc) and one error line" \
	bash -c '[ "$1" -eq 2 ] && [ "$(wc -l <"$2")" -eq 1 ] && grep -q "unknown value .nfs." "$2"' _ "$rc" "$WORK/bad.out"
finish
