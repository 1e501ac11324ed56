#!/bin/bash
# bench/dirahead.sh - many small files: read-ahead across files and the
# background fill, side by side in one run.
#
#   make bench && bench/dirahead.sh [--latency-ms 50] [--bw 64M] [--classes 10]
#                                [--files 150] [--inorder-files 400]
#                                [--no-rclone]
#
# The store: nginx serving the trees from local disk behind bench/delayproxy
# (--latency-ms before the first byte of every response, --bw per
# connection), as bench/objstore.sh.  prefetchfs reads an nginx with the
# JSON index (size and mtime of every file: an open needs no HEAD), rclone
# one with the HTML index (its :http: backend parses HTML only), over the
# same directory, each behind its own delayproxy with the same settings.  The trainer: examples/folder_loader.py
# (PyTorch DataLoader, 4 workers, batches of 32, 50 ms of compute per batch,
# --checksum: the digest of every row must equal the local copy's).
#
# 1. In order: 4 workers each reading its own directory of 256 KiB files in
#    name order (--in-order), 4 directories of --inorder-files files.
# 2. Shuffled: a DataLoader with shuffle=True over --classes directories of
#    --files files of 110 KiB (fits memory), epochs 1 and 2.
# Rows: the local copy (the floor), prefetchfs with fill=off and
# next_file=off (this branch's features off), prefetchfs, prefetchfs with
# max_inflight=64 (small files are latency-bound: requests in flight, not
# bandwidth, set the rate), and rclone mount
# --vfs-cache-mode full (unless --no-rclone).  Data wait % = (wall -
# compute) / wall.  Results go to bench/results/xfile.md.  The machine this
# ran on is shared and loaded: figures are noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
LAT=50
BW=64M
CLASSES=10
FILES=150
IFILES=400
RCLONE=1
while [ $# -gt 0 ]; do
	case $1 in
	--latency-ms) LAT=$2; shift 2 ;;
	--bw) BW=$2; shift 2 ;;
	--classes) CLASSES=$2; shift 2 ;;
	--files) FILES=$2; shift 2 ;;
	--inorder-files) IFILES=$2; shift 2 ;;
	--no-rclone) RCLONE=0; shift ;;
	-h|--help) sed -n '2,/^# ran on is shared/p' "$0"; exit 0 ;;
	*) echo "bench/dirahead.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
for t in prefetchfs bench/delayproxy bench/mkdata; do
	[ -x "$t" ] || { echo "bench/dirahead.sh: $t missing: run 'make bench' first" >&2; exit 1; }
done
command -v nginx >/dev/null || { echo "bench/dirahead.sh: nginx missing: run tests/deps.sh" >&2; exit 1; }
command -v rclone >/dev/null || RCLONE=0
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
	{ echo "bench/dirahead.sh: needs python3-torch" >&2; exit 1; }

. tests/lib.sh
. tests/servers.sh
set +u
R=$TOP/bench/results
mkdir -p "$WORK/www/inorder" "$WORK/www/shuf" "$R"
for ((d = 0; d < 4; d++)); do
	bench/mkdata --seed $((d + 1)) "$WORK/www/inorder/dir$d" "$IFILES" 256K >/dev/null
done
for ((c = 0; c < CLASSES; c++)); do
	bench/mkdata --seed $((c + 11)) "$WORK/www/shuf/class$c" "$FILES" 110K >/dev/null
done
cat $(find "$WORK/www" -type f) >/dev/null
# store [--json]: nginx over $WORK/www behind a delayproxy; prints its URL
store() {
	nginx_start "$WORK/www" "$@" >/dev/null ||
		{ echo "bench/dirahead.sh: nginx did not start" >&2; exit 1; }
	local up=${NGINX_URL#http://}
	delayproxy_start "${up%/}" "$LAT" "$BW" >/dev/null ||
		{ echo "bench/dirahead.sh: delayproxy did not start" >&2; exit 1; }
}
store --json
URL=$DELAY_URL/
DELAY_LOG=$DELAY_DIR/log
RC_URL=""
if [ $RCLONE = 1 ]; then
	store
	RC_URL=$DELAY_URL/
fi
LOADER=(/usr/bin/python3 examples/folder_loader.py --workers 4 --batch 32 --compute-ms 50 --checksum)
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }

mount_pf() { # mnt opts
	pf_mount "$URL" "$1" -o "$2" || { echo "mount failed" >&2; exit 1; }
}
mount_rclone() { # mnt
	mkdir -p "$1"
	track_mount "$1"
	rclone mount :http: "$1" --http-url "$RC_URL" --read-only \
		--vfs-cache-mode full --cache-dir "$WORK/rcache.$(basename "$1")" \
		--log-file "$WORK/rclone.log" >/dev/null 2>&1 &
	track_pid $!
	for ((i = 0; i < 100; i++)); do
		mountpoint -q "$1" && return 0
		sleep 0.1
	done
	echo "rclone mount failed" >&2
	return 1
}
umount_any() { # mnt
	if pf_pid "$1" >/dev/null 2>&1 && [ -n "$(pf_pid "$1")" ]; then
		pf_umount "$1"
	else
		fusermount3 -u "$1" 2>/dev/null || true
	fi
}
# row LABEL ROOT EPOCHS [loader args]: one row per run; prints the data
# wait of each epoch and checks the digest against the local copy's
REF=""
row() {
	local label=$1 root=$2 epochs=$3 out e w=() dg
	shift 3
	out=$("${LOADER[@]}" --epochs "$epochs" "$@" "$root" 2>&1) ||
		{ printf '| %-40s | failed: %s |\n' "$label" "$(tail -1 <<<"$out")"; return; }
	while read -r line; do
		case $line in epoch=*) w+=("$(field data_wait_pct "$line")"); dg=$(field digest "$line") ;; esac
	done <<<"$out"
	[ -z "$REF" ] && REF=$dg
	[ "$dg" = "$REF" ] && dg="same" || dg="DIFFERS"
	printf '| %-40s | %8s | %8s | %6s |\n' "$label" "${w[0]:-?}" "${w[1]:--}" "$dg"
}
stats_line() { # mnt: the dirahead and fill stats, one line
	python3 - "$1/.prefetchfs/stats" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
x, f, t = s["dirahead"], s["fill"], s["totals"]
print("    (stats: files taken from the engine's opens %d, fill %s %d/%d bytes, hits %d misses %d waits %d)"
      % (x["taken"], f["state"], f["bytes_done"], f["bytes_total"], t["hits"], t["misses"], t["waits"]))
PY
}

{
echo "## Many small files: $(head -1 "$DELAY_LOG" | sed 's/^delayproxy: //')"
echo
echo "nginx behind bench/delayproxy: ${LAT} ms before the first byte, $BW/s per connection;"
echo "prefetchfs reads nginx's JSON index (every file's size and mtime: opens need no HEAD),"
echo "rclone the HTML index (its :http: backend parses HTML only) through a second proxy."
echo "examples/folder_loader.py, 4 workers, batches of 32, 50 ms compute per batch."
echo "Shared, loaded 2-core machine (load average $(cut -d' ' -f1-3 /proc/loadavg)): noisy."
echo
echo "### In order: 4 workers, each its own directory of $IFILES files of 256 KiB"
echo
printf '| %-40s | %8s | %8s | %6s |\n' "reader" "wait %" "-" "bytes"
printf '|%s|%s|%s|%s|\n' "------------------------------------------" "----------" "----------" "--------"
REF=""
row "local copy" "$WORK/www/inorder" 1 --in-order
mount_pf "$WORK/m1" "next_file=off,fill=off"
row "prefetchfs next_file=off,fill=off" "$WORK/m1/inorder" 1 --in-order
pf_umount "$WORK/m1"
mount_pf "$WORK/m2" "max_memory=2G"
row "prefetchfs" "$WORK/m2/inorder" 1 --in-order
stats_line "$WORK/m2"
pf_umount "$WORK/m2"
mount_pf "$WORK/m2b" "max_memory=2G,max_inflight=64"
row "prefetchfs max_inflight=64" "$WORK/m2b/inorder" 1 --in-order
stats_line "$WORK/m2b"
pf_umount "$WORK/m2b"
echo
echo "### Shuffled: $CLASSES classes x $FILES files of 110 KiB, epochs 1 and 2"
echo
printf '| %-40s | %8s | %8s | %6s |\n' "reader" "epoch 1" "epoch 2" "bytes"
printf '|%s|%s|%s|%s|\n' "------------------------------------------" "----------" "----------" "--------"
REF=""
row "local copy" "$WORK/www/shuf" 2
mount_pf "$WORK/m3" "next_file=off,fill=off,max_memory=2G"
row "prefetchfs next_file=off,fill=off" "$WORK/m3/shuf" 2
pf_umount "$WORK/m3"
mount_pf "$WORK/m4" "max_memory=2G"
row "prefetchfs" "$WORK/m4/shuf" 2
stats_line "$WORK/m4"
pf_umount "$WORK/m4"
mount_pf "$WORK/m4b" "max_memory=2G,max_inflight=64"
row "prefetchfs max_inflight=64" "$WORK/m4b/shuf" 2
stats_line "$WORK/m4b"
pf_umount "$WORK/m4b"
if [ $RCLONE = 1 ]; then
	if mount_rclone "$WORK/m5"; then
		row "rclone mount --vfs-cache-mode full" "$WORK/m5/shuf" 2
		fusermount3 -u "$WORK/m5" 2>/dev/null || true
	fi
fi
} | tee "$R/xfile.md"
