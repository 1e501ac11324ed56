#!/bin/bash
# bench/objstore.sh - prefetchfs over an object store, side by side in one run.
#
#   make bench && bench/objstore.sh [--size 1G] [--latency-ms 50] [--bw 64M]
#                                   [--batch 8M] [--compute-ms 40]
#
# The store: nginx (Debian) serving the dataset from local disk (its files
# in the page cache), behind bench/delayproxy, which holds the first byte
# of every response for --latency-ms and paces every connection to --bw
# per second: an object store reached over a network, one request costing
# a round trip and one connection giving a bounded rate.
#
# 1. Plain sequential read of one --size object (bench/trainer --scan,
#    1 MiB read()s): one ranged GET stream on a single connection (curl,
#    the single-connection rate), prefetchfs -o prefetch=off, prefetchfs.
# 2. Trainer-like load (batches of --batch read with 1 MiB read()s, then
#    --compute-ms of compute): the object's local copy (nginx's file, in
#    the page cache: the floor, what the read() copies alone cost),
#    prefetchfs -o prefetch=off, prefetchfs; data wait % = (wall -
#    compute) / wall; p50 ms: the median time to read a batch; 1st ms:
#    from the open to the first whole batch.
# Each prefetchfs row also gives the CPU seconds the daemon and the proxy
# used during it (utime + stime), what limits a 2-core machine.
#
# Results are printed and written to bench/results/objstore.md.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=1G
LAT=50
BW=64M
BATCH=8M
COMPUTE=40
while [ $# -gt 0 ]; do
	case $1 in
	--size) SIZE=$2; shift 2 ;;
	--latency-ms) LAT=$2; shift 2 ;;
	--bw) BW=$2; shift 2 ;;
	--batch) BATCH=$2; shift 2 ;;
	--compute-ms) COMPUTE=$2; shift 2 ;;
	-h|--help) sed -n '2,/^# Results are printed/p' "$0"; exit 0 ;;
	*) echo "bench/objstore.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
for t in prefetchfs bench/delayproxy bench/trainer bench/mkdata; do
	[ -x "$t" ] || { echo "bench/objstore.sh: $t missing: run 'make bench' first" >&2; exit 1; }
done
command -v nginx >/dev/null || { echo "bench/objstore.sh: nginx missing: run tests/deps.sh" >&2; exit 1; }

# the test library gives temporary dirs, mounts and servers that are
# always cleaned up
. tests/lib.sh
. tests/servers.sh
set +u
R=$TOP/bench/results
mkdir -p "$WORK/www" "$R"
bench/mkdata "$WORK/www" 1 "$SIZE" >/dev/null
FILE=file-000000.bin
cat "$WORK/www/$FILE" >/dev/null
BYTES=$(stat -c %s "$WORK/www/$FILE")
nginx_start "$WORK/www" >/dev/null
UP=${NGINX_URL#http://}
delayproxy_start "${UP%/}" "$LAT" "$BW" >/dev/null || { echo "bench/objstore.sh: delayproxy did not start" >&2; exit 1; }
URL=$DELAY_URL/
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# cpu_s PID TICKS0: CPU seconds PID used since TICKS0
cpu_s() { python3 -c "print('%.2f' % (($(cpu_ticks "$1") - $2) / $(getconf CLK_TCK)))"; }

mount_pf() { # mnt opts
	pf_mount "$URL" "$1" -o "$2" || { echo "mount failed" >&2; exit 1; }
}
# cpu_start MNT / cpu_cols: the daemon's and the proxy's CPU seconds
cpu_start() {
	DPID=$(pf_pid "$1")
	D0=$(cpu_ticks "$DPID")
	P0=$(cpu_ticks "$DELAY_PID")
}
cpu_cols() { printf '%8s | %8s' "$(cpu_s "$DPID" "$D0")" "$(cpu_s "$DELAY_PID" "$P0")"; }
scan() { # label mnt file
	local out
	cpu_start "$2"
	out=$(bench/trainer --scan "$2/$3")
	printf '| %-34s | %9s | %8s | %s |\n' "$1" "$(field mb_s "$out")" \
		"$(python3 -c "print('%.1f' % ($(field mb_s "$out") / $SINGLE))")" \
		"$(cpu_cols)"
}
train() { # label mnt file (mnt "" : the local copy)
	local out cols="       - |        -"
	[ -n "$2" ] && cpu_start "$2"
	out=$(bench/trainer --batch "$BATCH" --compute-ms "$COMPUTE" "${2:-$WORK/www}/$3")
	[ -n "$2" ] && cols=$(cpu_cols)
	printf '| %-34s | %8s | %9s | %9s | %9s | %s |\n' "$1" \
		"$(field data_wait_pct "$out")" "$(field mb_s "$out")" \
		"$(field batch_wait_p50_ms "$out")" \
		"$(field first_batch_ms "$out")" "$cols"
}

# the single-connection rate: one ranged GET of 256 MiB through the proxy
ONE=$(( BYTES < (256 << 20) ? BYTES : (256 << 20) ))
SINGLE=$(curl -s -o /dev/null -r "0-$((ONE - 1))" -w '%{speed_download}' "$URL$FILE" |
	python3 -c 'import sys; print("%.1f" % (float(sys.stdin.read()) / 1e6))')

{
echo "## Object store: $(head -1 "$DELAY_DIR/log" | sed 's/^delayproxy: //')"
echo
echo "nginx behind bench/delayproxy: ${LAT} ms before the first byte of every response, $BW/s"
echo "per connection. Object: $((BYTES >> 20)) MiB."
echo
echo "### Sequential read (1 MiB read()s, no compute)"
echo
printf '| %-34s | %9s | %8s | %8s | %8s |\n' "reader" "MB/s" "x single" "daemon s" "proxy s"
printf '|%s|%s|%s|%s|%s|\n' "------------------------------------" "-----------" "----------" "----------" "----------"
printf '| %-34s | %9s | %8s | %8s | %8s |\n' "one connection (curl, one GET)" "$SINGLE" "1.0" "-" "-"
mount_pf "$WORK/off" prefetch=off
scan "prefetchfs -o prefetch=off" "$WORK/off" "$FILE"
pf_umount "$WORK/off"
mount_pf "$WORK/on" max_memory=2G
scan "prefetchfs" "$WORK/on" "$FILE"
cp "$WORK/on/.prefetchfs/stats" "$WORK/scan.json"
pf_umount "$WORK/on"
echo
echo "### Trainer-like load: batches of $BATCH, ${COMPUTE} ms of compute after each"
echo
printf '| %-34s | %8s | %9s | %9s | %9s | %8s | %8s |\n' "reader" "wait %" "MB/s" "p50 ms" "1st ms" "daemon s" "proxy s"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' "------------------------------------" "----------" "-----------" "-----------" "-----------" "----------" "----------"
train "local copy (page cache, no FUSE)" "" "$FILE"
mount_pf "$WORK/off2" prefetch=off
train "prefetchfs -o prefetch=off" "$WORK/off2" "$FILE"
pf_umount "$WORK/off2"
mount_pf "$WORK/on2" max_memory=2G
train "prefetchfs" "$WORK/on2" "$FILE"
cp "$WORK/on2/.prefetchfs/stats" "$WORK/train.json"
pf_umount "$WORK/on2"
echo
python3 - "$WORK/scan.json" "$WORK/train.json" <<'PY'
import json, sys
for label, f in zip(("scan", "trainer"), sys.argv[1:]):
    s = json.load(open(f))
    t = s.get("transport", {})
    for st in s["streams"]:
        print("%s: learned %s, batch %.1f MiB, window %.1f MiB; %d READs, %d waits (%.0f ms); %d GETs, %d retries"
              % (label, st["pattern"], st["batch"] / 2**20, st["window"] / 2**20, st["reads"],
                 st["waits"], st["wait_ms"], t.get("requests", 0), t.get("retries", 0)))
PY
} | tee "$WORK/out.md"
{
	echo "# prefetchfs object-store benchmark ($(date -u +%Y-%m-%d), $(nproc) cores)"
	echo
	echo "Command: bench/objstore.sh --size $SIZE --latency-ms $LAT --bw $BW --batch $BATCH --compute-ms $COMPUTE"
	echo
	cat "$WORK/out.md"
} >"$R/objstore.md"
echo
echo "written: bench/results/objstore.md"
finish >/dev/null
