#!/bin/bash
# bench/objstore.sh - prefetchfs over an object store, side by side in one run.
#
#   make bench && bench/objstore.sh [--quick] [--size 1G] [--latency-ms 50]
#                                   [--bw 64M] [--batch 8M] [--compute-ms 40]
#                                   [--shard-size 512M] [--runs 5]
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
# 3. Four readers (issue 14), each on its own --shard-size shard, read()
#    of 1 MiB after POSIX_FADV_SEQUENTIAL, 8 MiB batches, 160 ms compute
#    after each (200 MiB/s in all), --runs times, each on a fresh mount,
#    next to the same readers over the local page-cached shards (the
#    floor); then the same with 40 ms compute (800 MiB/s) over four shards
#    of half that size, read whole (issue 14's 4 x 256 MiB: readers that
#    stop halfway through their shards would be charged for the read-ahead
#    past the point where they stop).  Reports every run and min / median
#    / max wait.
# Each prefetchfs row also gives the CPU seconds the daemon and the proxy
# used during it (utime + stime, from /proc), what limits a 2-core
# machine, the daemon's CPU seconds per GiB delivered to the readers and
# its peak RSS (VmHWM, read just before the unmount); every shape has its
# local page-cache floor (the same reader over the local copy).
# --quick: --size 256M, --shard-size 128M, --runs 3 (about a minute).
#
# Results are printed and written to OUT/objstore.md (--out OUT, default
# bench/results).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=1G
LAT=50
BW=64M
BATCH=8M
COMPUTE=40
SHARD=512M
RUNS=5

OUTD=bench/results
ARGS="$*"
while [ $# -gt 0 ]; do
	case $1 in
	--size) SIZE=$2; shift 2 ;;
	--latency-ms) LAT=$2; shift 2 ;;
	--bw) BW=$2; shift 2 ;;
	--batch) BATCH=$2; shift 2 ;;
	--compute-ms) COMPUTE=$2; shift 2 ;;
	--shard-size) SHARD=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--out) OUTD=$2; shift 2 ;;
	--quick) SIZE=256M; SHARD=128M; RUNS=3; shift ;;
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
. bench/lib.sh
set +u
mkdir -p "$WORK/www" "$OUTD"
R=$(cd "$OUTD" && pwd)
bench/mkdata "$WORK/www" 1 "$SIZE" >/dev/null
FILE=file-000000.bin
bench/mkdata --seed 7 "$WORK/gen" 4 "$SHARD" >/dev/null
mkdir -p "$WORK/www/shards"
for i in 0 1 2 3; do mv "$WORK/gen/file-00000$i.bin" "$WORK/www/shards/shard-$i.bin"; done
BYTES=$(stat -c %s "$WORK/www/$FILE")
SHARD_BYTES=$(stat -c %s "$WORK/www/shards/shard-0.bin")
# the 40 ms shape's shards: half the size, their own data
bench/mkdata --seed 8 "$WORK/gen" 4 "$((SHARD_BYTES / 2))" >/dev/null
mkdir -p "$WORK/www/half"
for i in 0 1 2 3; do mv "$WORK/gen/file-00000$i.bin" "$WORK/www/half/shard-$i.bin"; done
cat "$WORK/www/$FILE" "$WORK"/www/shards/* "$WORK"/www/half/* >/dev/null
nginx_start "$WORK/www" >/dev/null
UP=${NGINX_URL#http://}
delayproxy_start "${UP%/}" "$LAT" "$BW" >/dev/null || { echo "bench/objstore.sh: delayproxy did not start" >&2; exit 1; }
URL=$DELAY_URL/
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# cpu_s PID TICKS0: CPU seconds PID used since TICKS0
cpu_s() { python3 -c "print('%.2f' % (($(cpu_ticks "$1") - $2) / $(getconf CLK_TCK)))"; }

mount_pf() { # mnt [opts]
	pf_mount "$URL" "$1" ${2:+-o "$2"} || { echo "mount failed" >&2; exit 1; }
}
hwm_mib() { awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo -; }
# cpu_start MNT / cpu_cols BYTES: the daemon's and the proxy's CPU seconds
# since cpu_start, the daemon's CPU seconds per GiB of BYTES and its peak
# RSS (call it before the unmount)
cpu_start() {
	DPID=$(pf_pid "$1")
	D0=$(cpu_ticks "$DPID")
	P0=$(cpu_ticks "$DELAY_PID")
}
cpu_cols() {
	local d
	d=$(cpu_s "$DPID" "$D0")
	printf '%8s | %7s | %7s | %8s' "$d" "$(python3 -c "print('%.2f' % ($d / ($1 / 2**30)) if $1 else '-')")" \
		"$(hwm_mib "$DPID")" "$(cpu_s "$DELAY_PID" "$P0")"
}
NOCPU="       - |       - |       - |        -"
# warm FILE...: nginx's files back into the page cache before a row: the
# VM's proactive reclaim (DAMON pageout) drops page cache idle for about a
# minute, so data read once at the start would be partly on disk for the
# later rows, and the first of several runs would pay for it alone
warm() { cat "$@" >/dev/null; }
scan() { # label mnt file (mnt "": the local copy)
	local out cols=$NOCPU
	warm "$WORK/www/$3"
	[ -n "$2" ] && cpu_start "$2"
	out=$(bench/trainer --scan "${2:-$WORK/www}/$3")
	[ -n "$2" ] && cols=$(cpu_cols "$(field bytes "$out")")
	printf '| %-34s | %9s | %8s | %s |\n' "$1" "$(field mb_s "$out")" \
		"$(python3 -c "print('%.1f' % ($(field mb_s "$out") / $SINGLE))")" "$cols"
}
train() { # label mnt file (mnt "" : the local copy)
	local out cols=$NOCPU
	warm "$WORK/www/$3"
	[ -n "$2" ] && cpu_start "$2"
	out=$(bench/trainer --batch "$BATCH" --compute-ms "$COMPUTE" "${2:-$WORK/www}/$3")
	[ -n "$2" ] && cols=$(cpu_cols "$(field bytes "$out")")
	printf '| %-34s | %8s | %9s | %9s | %9s | %s |\n' "$1" \
		"$(field data_wait_pct "$out")" "$(field mb_s "$out")" \
		"$(field batch_wait_p50_ms "$out")" \
		"$(field first_batch_ms "$out")" "$cols"
}
# readers DIR COMPUTE SET: four bench/trainer processes, reader r reading
# DIR/SET/shard-r.bin whole; prints "wait mb_s bytes": the mean wait of the
# four, all bytes / the longest wall
readers() {
	local r pids=()
	for r in 0 1 2 3; do
		bench/trainer --fadvise sequential --batch 8M --read-size 1M \
			--compute-ms "$2" "$1/$3/shard-$r.bin" >"$WORK/rd.$r" &
		pids+=($!)
	done
	for r in "${pids[@]}"; do wait "$r"; done
	python3 - "$WORK"/rd.[0-3] <<'PY'
import sys
rows = [dict(t.split("=", 1) for t in open(f).read().split() if "=" in t) for f in sys.argv[1:]]
b = sum(int(r["bytes"]) for r in rows)
wall = max(float(r["wall_s"]) for r in rows)
print("%.1f %.1f %d" % (sum(float(r["data_wait_pct"]) for r in rows) / len(rows), b / wall / 1e6, b))
PY
}
# shape LABEL COMPUTE SET: --runs runs of the four readers over the
# local copy and over a fresh prefetchfs mount each, one row per run, then
# min / median / max
shape() {
	local i loc pf w m b cols
	printf '| %3s | %8s | %10s | %8s | %9s | %s |\n' "run" "floor %" "floor MB/s" "wait %" "MB/s" \
		"daemon s | s / GiB | RSS MiB |  proxy s"
	printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' "-----" "----------" "------------" "----------" "-----------" \
		"----------" "---------" "---------" "----------"
	: >"$WORK/shape.tsv"
	for i in $(seq "$RUNS"); do
		warm "$WORK/www/$3"/*
		read -r lw lm _ <<<"$(readers "$WORK/www" "$2" "$3")"
		mount_pf "$WORK/rd$i"
		cpu_start "$WORK/rd$i"
		read -r w m b <<<"$(readers "$WORK/rd$i" "$2" "$3")"
		cols=$(cpu_cols "$b")
		pf_umount "$WORK/rd$i"
		printf '| %3s | %8s | %10s | %8s | %9s | %s |\n' "$i" "$lw" "$lm" "$w" "$m" "$cols"
		printf '%s\t%s\n' "$lw" "$w" >>"$WORK/shape.tsv"
	done
	echo
	python3 - "$WORK/shape.tsv" "$1" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for name, col in (("local page-cache floor", 0), ("prefetchfs", 1)):
    v = sorted(float(r[col]) for r in rows)
    print("%s, %s: data wait min %.1f%% / median %.1f%% / max %.1f%% over %d runs"
          % (sys.argv[2], name, v[0], statistics.median(v), v[-1], len(v)))
PY
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
printf '| %-34s | %9s | %8s | %8s | %7s | %7s | %8s |\n' "reader" "MB/s" "x single" "daemon s" "s / GiB" "RSS MiB" "proxy s"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' "------------------------------------" "-----------" "----------" "----------" "---------" "---------" "----------"
printf '| %-34s | %9s | %8s | %s |\n' "one connection (curl, one GET)" "$SINGLE" "1.0" "$NOCPU"
scan "local copy (page cache, no FUSE)" "" "$FILE"
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
printf '| %-34s | %8s | %9s | %9s | %9s | %8s | %7s | %7s | %8s |\n' "reader" "wait %" "MB/s" "p50 ms" "1st ms" "daemon s" "s / GiB" "RSS MiB" "proxy s"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' "------------------------------------" "----------" "-----------" "-----------" "-----------" "----------" "---------" "---------" "----------"
train "local copy (page cache, no FUSE)" "" "$FILE"
mount_pf "$WORK/off2" prefetch=off
train "prefetchfs -o prefetch=off" "$WORK/off2" "$FILE"
pf_umount "$WORK/off2"
mount_pf "$WORK/on2" max_memory=2G
train "prefetchfs" "$WORK/on2" "$FILE"
cp "$WORK/on2/.prefetchfs/stats" "$WORK/train.json"
pf_umount "$WORK/on2"
echo
echo "### Four readers, each its own $((SHARD_BYTES >> 20)) MiB shard: 1 MiB read()s (POSIX_FADV_SEQUENTIAL), 8 MiB batches, 160 ms compute"
echo
echo "prefetchfs with its defaults, a fresh mount per run; floor: the same readers over the local"
echo "page-cached shards. wait % = mean of the four readers; MB/s = all bytes / the longest wall."
echo
shape "160 ms" 160 shards
echo
echo "### Four readers, each its own $((SHARD_BYTES / 2 >> 20)) MiB shard, 40 ms compute"
echo
shape "40 ms" 40 half
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
	echo "# prefetchfs object-store benchmark ($(date -u +%Y-%m-%d), $(bench_machine))"
	echo
	echo "Command: bench/objstore.sh${ARGS:+ $ARGS} (--size $SIZE --latency-ms $LAT --bw $BW --batch $BATCH --compute-ms $COMPUTE --shard-size $SHARD --runs $RUNS)"
	echo
	echo "Daemon s = CPU seconds (utime + stime) of the prefetchfs daemon during the row; s / GiB = the"
	echo "same per GiB the readers got; RSS MiB = the daemon's peak resident memory (VmHWM, read before"
	echo "its unmount: the mount's whole life); proxy s = CPU seconds of bench/delayproxy. Other"
	echo "processes may share the machine: compare within one run."
	echo
	cat "$WORK/out.md"
} >"$R/objstore.md"
echo
echo "written: $R/objstore.md"
# (without -e: lib.sh's exit trap ends with a pkill that finds nothing,
# which under -e made the script's status 1 after a good run)
set +e
finish >/dev/null
