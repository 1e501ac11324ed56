#!/bin/bash
# bench/hints.sh - shuffled PyTorch loaders over an object store, with and
# without declared order (hints, issue 13), side by side in one run.
#
#   make bench && bench/hints.sh [--size 768M] [--max-memory 256M]
#       [--latency-ms 50] [--bw 64M] [--record 256K] [--file 256K]
#       [--batch 16] [--workers 4] [--compute-ms 40] [--max-inflight 64]
#       [--only records|tree]
#
# The store: nginx serving the data set from local disk behind
# bench/delayproxy (--latency-ms before the first byte of every response,
# --bw per second per connection), as bench/objstore.sh.  The data set is
# --size bytes, larger than the mount's --max-memory, and no cache_dir:
# 1. records of one big file (numpy memmap style): examples/torch_loader.py
#    --shuffle, --record bytes a sample, --batch samples a batch;
# 2. a file tree (ImageFolder style, 16 class directories of --file byte
#    files): examples/folder_loader.py, a new random order every epoch.
# Each runs on the local copy (nginx's files, in the page cache: the
# floor), on prefetchfs without hints, and on prefetchfs with --hints
# (HintedSampler writes each epoch's order to .prefetchfs/plan).  Columns:
# data wait % = (wall - compute) / wall; MB/s; fetched/read = the daemon's
# bytes_fetched / the bytes the loader read; the plans' counts.
#
# Results are printed and written to bench/results/hints.md.  The machine
# this runs on may be shared: the local copy's row in the same run is the
# reference for what the CPU alone costs.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=768M
MAXMEM=256M
LAT=50
BW=64M
RECORD=256K
FILE=256K
BATCH=16
WORKERS=4
COMPUTE=40
INFLIGHT=64
ONLY=
while [ $# -gt 0 ]; do
	case $1 in
	--size) SIZE=$2; shift 2 ;;
	--max-memory) MAXMEM=$2; shift 2 ;;
	--latency-ms) LAT=$2; shift 2 ;;
	--bw) BW=$2; shift 2 ;;
	--record) RECORD=$2; shift 2 ;;
	--file) FILE=$2; shift 2 ;;
	--batch) BATCH=$2; shift 2 ;;
	--workers) WORKERS=$2; shift 2 ;;
	--compute-ms) COMPUTE=$2; shift 2 ;;
	--max-inflight) INFLIGHT=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	-h|--help) sed -n '2,/^# Results are printed/p' "$0"; exit 0 ;;
	*) echo "bench/hints.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
for t in prefetchfs bench/delayproxy bench/mkdata; do
	[ -x "$t" ] || { echo "bench/hints.sh: $t missing: run 'make bench' first" >&2; exit 1; }
done
command -v nginx >/dev/null || { echo "bench/hints.sh: nginx missing: run tests/deps.sh" >&2; exit 1; }
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || { echo "bench/hints.sh: python3-torch missing" >&2; exit 1; }

. tests/lib.sh
. tests/servers.sh
set +u
R=$TOP/bench/results
mkdir -p "$WORK/www/tree" "$R"
bytes_of() { numfmt --from=iec "$1"; }
TOTAL=$(bytes_of "$SIZE")
FBYTES=$(bytes_of "$FILE")
# one big file, and the tree: the same bytes cut into files
bench/mkdata "$WORK/www" 1 "$SIZE" >/dev/null
BIG=file-000000.bin
NFILES=$((TOTAL / FBYTES))
$PY - "$WORK/www/$BIG" "$WORK/www/tree" "$FBYTES" "$NFILES" <<'PY'
import os, sys
big, tree, fb, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(big, "rb") as f:
    for i in range(n):
        d = os.path.join(tree, "class%02d" % (i % 16))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "s%06d.bin" % i), "wb") as o:
            o.write(f.read(fb))
PY
cat "$WORK/www/$BIG" >/dev/null
find "$WORK/www/tree" -type f -exec cat {} + >/dev/null
nginx_start "$WORK/www" >/dev/null
UP=${NGINX_URL#http://}
delayproxy_start "${UP%/}" "$LAT" "$(bytes_of "$BW")" >/dev/null ||
	{ echo "bench/hints.sh: delayproxy did not start" >&2; exit 1; }
URL=$DELAY_URL/
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2" | tail -1; }

# keep_cache=off: the kernel's page cache (not bounded by max_memory)
# would serve a second epoch of a data set that fits the machine's RAM
OPTS="max_memory=$MAXMEM,max_inflight=$INFLIGHT,keep_cache=off"
mount_pf() { pf_mount "$URL" "$1" -o "$OPTS" || { echo "mount failed" >&2; exit 1; }; }

# row LABEL OUT [STATS]: one line of the table from a loader's output
# (its last line: the whole run) and the daemon's stats
row() {
	local out=$2 stats=${3:-}
	local wait mbs bytes ratio="-" plans="-"
	wait=$(field data_wait_pct "$out")
	mbs=$(field mb_s "$out")
	bytes=$(grep -o '\bbytes=[0-9]*' <<<"$out" | cut -d= -f2 |
		awk '{ s += $1 } END { print s + 0 }')
	if [ -n "$stats" ]; then
		read -r ratio plans < <($PY - "$stats" "$bytes" <<-'PY'
		import json, sys
		# strict=False: a stray control byte was once seen in a big
		# stats file (a stream entry); the totals parse all the same
		s = json.loads(open(sys.argv[1], errors="replace").read(), strict=False)
		t = s["totals"]
		r = int(sys.argv[2]) or 1
		p = s.get("plans_ended", {})
		print("%.3f" % (t["bytes_fetched"] / r),
		      "%d/%d/%d/%.1fM" % (p.get("read_planned", 0), p.get("fetched", 0),
		                          p.get("read_unplanned", 0),
		                          p.get("wasted_bytes", 0) / 2**20)
		      if p.get("plans") else "-")
		PY
		)
	fi
	printf '| %-36s | %7s | %7s | %10s | %7s | %-22s |\n' "$1" "$wait" "$mbs" \
		"$(( bytes >> 20 ))" "$ratio" "$plans"
}
header() {
	printf '| %-36s | %7s | %7s | %10s | %7s | %-22s |\n' "reader" "wait %" "MB/s" \
		"MiB read" "fetched/read" "planned/ahead/out/wasted"
	printf '|%s|%s|%s|%s|%s|%s|\n' "--------------------------------------" \
		"---------" "---------" "------------" "---------" "------------------------"
}

# records ARGS...: torch_loader.py over the big file
records() {
	$PY examples/torch_loader.py --record "$RECORD" --batch "$BATCH" \
		--workers "$WORKERS" --compute-ms "$COMPUTE" --shuffle --seed 1 "$@"
}
# tree ARGS...: folder_loader.py over the tree
tree() {
	$PY examples/folder_loader.py --batch "$BATCH" --workers "$WORKERS" \
		--compute-ms "$COMPUTE" --seed 1 "$@"
}
mount_run() { # label kind mnt args...
	local label=$1 kind=$2 mnt=$3 out
	shift 3
	mount_pf "$mnt"
	out=$("$kind" "$@" 2>&1) || { echo "$label failed: $out" >&2; exit 1; }
	echo "$out" >>"$WORK/loaders.log"
	cp "$mnt/.prefetchfs/stats" "$WORK/stats.json"
	pf_umount "$mnt"
	row "$label" "$out" "$WORK/stats.json"
}

{
echo "## Shuffled loaders over an object store: $(head -1 "$DELAY_DIR/log" | sed 's/^delayproxy: //')"
echo
echo "nginx behind bench/delayproxy: ${LAT} ms before the first byte of every response, $BW/s"
echo "per connection. Data set $((TOTAL >> 20)) MiB; prefetchfs -o $OPTS, no cache_dir."
echo "$WORKERS DataLoader workers, batches of $BATCH samples, ${COMPUTE} ms of compute after each."
echo "Machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start (shared)."
if [ "$ONLY" != tree ]; then
echo
echo "### Records of one big file ($RECORD a record), torch_loader.py --shuffle, 1 epoch"
echo
header
out=$(records "$WORK/www/$BIG" 2>&1); echo "$out" >>"$WORK/loaders.log"
row "local copy (page cache, no FUSE)" "$out"
mount_run "prefetchfs" records "$WORK/r1" "$WORK/r1/$BIG"
mount_run "prefetchfs, --hints" records "$WORK/r2" "$WORK/r2/$BIG" --hints
fi
if [ "$ONLY" != records ]; then
echo
echo "### A tree of $NFILES files of $FILE, folder_loader.py (shuffled), 2 epochs (without hints: 1)"
echo
header
out=$(tree --epochs 2 "$WORK/www/tree" 2>&1); echo "$out" >>"$WORK/loaders.log"
row "local copy (page cache, no FUSE)" "$out"
mount_run "prefetchfs" tree "$WORK/t1" --epochs 1 "$WORK/t1/tree"
mount_run "prefetchfs, --hints" tree "$WORK/t2" --epochs 2 "$WORK/t2/tree" --hints
fi
echo
echo "wait % and MB/s of a 2-epoch run are its last epoch's; MiB read is the whole run's."
echo "Per epoch:"
grep -E '^epoch=' "$WORK/loaders.log" | sed 's/^/    /' || true
} | tee "$WORK/out.md"
{
	echo "# prefetchfs hints benchmark ($(date -u +%Y-%m-%d), $(nproc) cores)"
	echo
	echo "Command: bench/hints.sh --size $SIZE --max-memory $MAXMEM --latency-ms $LAT --bw $BW" \
		"--record $RECORD --file $FILE --batch $BATCH --workers $WORKERS --compute-ms $COMPUTE" \
		"--max-inflight $INFLIGHT"
	echo
	cat "$WORK/out.md"
} >"$R/hints.md"
echo
echo "written: bench/results/hints.md"
finish >/dev/null
