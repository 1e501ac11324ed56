#!/bin/bash
# bench/tierfile.sh - what one small file costs a reader from the shared
# cache tier (issue 30), beside the local copy and a mount's memory: one
# reader, one file after the other in a shuffled order, each open + read
# timed.
#
#   make && make bench && bench/tierfile.sh [--files N] [--rounds N]
#                                           [--mc-threads N] [--out DIR]
#                                           [--before BIN]
#
# About a minute.  The origin is nginx (no delay: only its first read
# matters); one memcached on 127.0.0.2; mounts with max_memory 32M and the
# tier (shared_timeout 100).  Mount A reads the tree once (every file
# stored in the tier); then, for each round, the local copy (page cache),
# a fresh mount B reading the tree from the tier in a new order, and B
# again in that order (from its memory, what 32M keeps).  Per line: mean,
# median, p90, p99 of a file's open + read, and for B the tier's own part
# (hit_ns / hits: submit to answer), keys per multi-get and look-ups
# (keys asked) per file read.  --before BIN: each round also reads the
# tree in the same order through a mount of BIN (another build of
# prefetchfs, say the one before a change), right after B: the two side by
# side in one run.
# Output: OUT/tierfile.md (default bench/results).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ARGS="$*"
FILES=600
ROUNDS=3
MCT=2
OUT=bench/results
BEFORE=
usage_err() { echo "bench/tierfile.sh: $* (see --help)" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--files) [ $# -ge 2 ] || usage_err "--files needs a value"; FILES=$2; shift 2 ;;
	--rounds) [ $# -ge 2 ] || usage_err "--rounds needs a value"; ROUNDS=$2; shift 2 ;;
	--mc-threads) [ $# -ge 2 ] || usage_err "--mc-threads needs a value"; MCT=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || usage_err "--out needs a value"; OUT=$2; shift 2 ;;
	--before) [ $# -ge 2 ] || usage_err "--before needs a value"; BEFORE=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) usage_err "unknown argument '$1'" ;;
	esac
done
for v in "$FILES" "$ROUNDS" "$MCT"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || usage_err "'$v' is not a positive integer"
done
[ -x prefetchfs ] || { echo "bench/tierfile.sh: ./prefetchfs missing: run make" >&2; exit 1; }
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || usage_err "--before: '$BEFORE' is not an executable"
[ -z "$BEFORE" ] || BEFORE=$(cd "$(dirname "$BEFORE")" && pwd)/$(basename "$BEFORE")
PY=/usr/bin/python3
. tests/lib.sh
. tests/servers.sh
. bench/lib.sh
set +u
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
D=$WORK/data
mkdir -p "$D"
$PY bench/mktree.py "$D/tree" "$FILES" 64K >/dev/null || exit 1
find "$D" -type f -exec cat {} + >/dev/null
nginx_start "$D" --json >/dev/null || { echo "bench/tierfile.sh: nginx did not start" >&2; exit 1; }
memcached_start 127.0.0.2 -t "$MCT" >/dev/null || { echo "bench/tierfile.sh: memcached did not start" >&2; exit 1; }
SECRET=$WORK/secret
tier_secret "$SECRET"
O="max_memory=32M,shared_cache=$MC_SERVER,shared_secret=$SECRET,shared_timeout=100"
cat >"$WORK/rd.py" <<'PY'
import os, random, sys, time
root, seed, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs)
random.Random(seed).shuffle(files)
lat = []
for p in files:
    t = time.perf_counter()
    with open(p, "rb") as f:
        while f.read(1 << 20):
            pass
    lat.append(time.perf_counter() - t)
lat.sort()
n = len(lat)
print("| %s | %d | %.3f | %.3f | %.3f | %.3f |" % (what, n, 1e3 * sum(lat) / n,
      1e3 * lat[n // 2], 1e3 * lat[n * 9 // 10], 1e3 * lat[n * 99 // 100]), end="")
PY
{
	echo "# bench/tierfile.sh"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(bench_machine); load before $LOAD0"
	echo
	echo "    bench/tierfile.sh $ARGS"
	echo
	echo "One reader, $FILES files of 64 KiB in a shuffled order, each open + read timed; mounts with max_memory=32M and the tier (shared_timeout=100) on one memcached -t $MCT."
	echo
	[ -z "$BEFORE" ] || echo "Before: $BEFORE (the rows \"the tier, before\")."
	[ -z "$BEFORE" ] || echo
	echo "| read from | files | mean ms | median ms | p90 ms | p99 ms | the tier's part: mean ms, keys per multi-get, look-ups per file |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
} >"$WORK/out.md"
# tier_part MNT: the tier's own mean hit, keys per multi-get, per file
tier_part() {
	stats_eval "$1" "' %.3f, %.2f, %.3f |' % (sc['hit_ns'] / max(sc['hits'], 1) / 1e6, sc['mget_keys'] / max(sc['mgets'], 1), sc['mget_keys'] / $FILES)"
}
# tier_read BIN MNT ROUND WHAT: a fresh mount of BIN reads the tree from
# the tier in the round's order: a row (left mounted)
tier_read() {
	local pf0=$PF
	PF=$1
	pf_mount_ready "$NGINX_URL" "$2" -o "$O" >/dev/null || { PF=$pf0; echo "bench/tierfile.sh: mount of $1 failed" >&2; return 1; }
	PF=$pf0
	$PY "$WORK/rd.py" "$2/tree" $((20 + $3)) "round $3: the tier$4" >>"$WORK/out.md"
	tier_part "$2" >>"$WORK/out.md"
}
A=$WORK/a
pf_mount_ready "$NGINX_URL" "$A" -o "$O" >/dev/null || { echo "bench/tierfile.sh: mount A failed" >&2; exit 1; }
$PY "$WORK/rd.py" "$A/tree" 1 "A: the origin" >/dev/null
for ((i = 0; i < 100; i++)); do
	[ "$(stats_eval "$A" "sc['stored'] >= $FILES")" = True ] && break
	sleep 0.1
done
pf_umount "$A"
for ((r = 1; r <= ROUNDS; r++)); do
	{ $PY "$WORK/rd.py" "$D/tree" $((10 + r)) "round $r: the local copy"; echo " |"; } >>"$WORK/out.md"
	# with --before, the two builds in turns first (the same order)
	if [ -n "$BEFORE" ] && ((r % 2)); then
		tier_read "$BEFORE" "$WORK/c$r" $r ", before" || exit 1
		pf_umount "$WORK/c$r"
	fi
	B=$WORK/b$r
	tier_read "$PF" "$B" $r "" || exit 1
	if [ -n "$BEFORE" ] && ! ((r % 2)); then
		tier_read "$BEFORE" "$WORK/c$r" $r ", before" || exit 1
		pf_umount "$WORK/c$r"
	fi
	{ $PY "$WORK/rd.py" "$B/tree" $((20 + r)) "round $r: the mount's memory (the same order again)"; echo " |"; } >>"$WORK/out.md"
	pf_umount "$B"
done
cp "$WORK/out.md" "$OUT/tierfile.md"
cat "$OUT/tierfile.md"
finish >/dev/null
