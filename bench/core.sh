#!/bin/bash
# bench/core.sh - the core benchmark, side by side in one run.
#
#   make bench && bench/core.sh [--size 1G] [--latency-ms 2] [--bw-mib 100]
#                               [--batch 8M] [--compute-ms 40] [--rounds 3]
#
# 1. Slow directory: bench/slowfs serves a dataset from local disk adding a
#    fixed latency per READ plus size / bandwidth (per request, requests run
#    concurrently).  A trainer-like load (bench/trainer: read a batch
#    sequentially in 1 MiB read()s, then compute) runs against
#      - the slow source read directly,
#      - prefetchfs -o prefetch=off over the slow source,
#      - prefetchfs over the slow source,
#      - the same file from the local page cache (the floor: no storage
#        cost at all, only the copies),
#    and prints data wait % = (wall - compute) / wall and MB/s.
# 2. Hot data: sequential 1 MiB reads of bytes already in memory, through
#    prefetchfs (its block cache; -o push=off,keep_cache=off so the kernel
#    page cache is dropped on each open and every pass reaches the daemon)
#    and through bench/memfs (a minimal FUSE fs replying from one buffer,
#    also dropping the page cache on open), alternated, --rounds times;
#    prints the median ratio.
#
# Results are printed and written to bench/results/core.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
TOP=$PWD

SIZE=1G
LAT=2
BW=100
BATCH=8M
COMPUTE=40
ROUNDS=3
while [ $# -gt 0 ]; do
	case $1 in
	--size) SIZE=$2; shift 2 ;;
	--latency-ms) LAT=$2; shift 2 ;;
	--bw-mib) BW=$2; shift 2 ;;
	--batch) BATCH=$2; shift 2 ;;
	--compute-ms) COMPUTE=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
	*) echo "bench/core.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done

for t in prefetchfs bench/slowfs bench/memfs bench/trainer bench/mkdata; do
	[ -x "$t" ] || { echo "bench/core.sh: $t missing: run 'make bench' first" >&2; exit 1; }
done

W=$(mktemp -d /tmp/pfbench.XXXXXX)
MNTS=()
cleanup() {
	local m
	for m in "${MNTS[@]}"; do
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u "$m" 2>/dev/null
	done
	sleep 0.3
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

set_ra() { # mountpoint kb
	echo "$2" >"/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb"
}
field() { # key line
	sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"
}
umount_wait() {
	fusermount3 -u "$1"
	for _ in $(seq 50); do
		pgrep -f "prefetchfs.* $1\$" >/dev/null || return 0
		sleep 0.1
	done
}

mkdir -p "$W/src" "$W/slow" "$W/pf" "$W/mem" bench/results
bench/mkdata "$W/src" 1 "$SIZE" >/dev/null
FILE=file-000000.bin
# the source in the page cache: only the simulated cost counts
cat "$W/src/$FILE" >/dev/null
BYTES=$(stat -c %s "$W/src/$FILE")

bench/slowfs -o "latency_ms=$LAT,bw_mib=$BW" "$W/src" "$W/slow" 2>/dev/null
MNTS+=("$W/slow")
# the direct reader gets the best the kernel offers: 1 MiB READs
set_ra "$W/slow" 1024

run_trainer() { # label path
	local out
	out=$(bench/trainer --batch "$BATCH" --compute-ms "$COMPUTE" "$2")
	printf '| %-38s | %8s | %9s | %9s |\n' "$1" \
		"$(field data_wait_pct "$out")" "$(field mb_s "$out")" \
		"$(field batch_wait_p50_ms "$out")"
	echo "$out" >>"$W/raw.txt"
}

{
echo "## Trainer-like load over a slow directory"
echo
echo "Slow store: bench/slowfs, ${LAT} ms per READ + size / ${BW} MiB/s per READ (READs served"
echo "concurrently). File: $((BYTES >> 20)) MiB. Load: batches of $BATCH read with 1 MiB read()s,"
echo "${COMPUTE} ms of compute after each. data wait % = (wall - compute) / wall."
echo
printf '| %-38s | %8s | %9s | %9s |\n' "reader" "wait %" "MB/s" "p50 ms"
printf '|%s|%s|%s|%s|\n' "----------------------------------------" "----------" "-----------" "-----------"
run_trainer "slow source, read directly" "$W/slow/$FILE"

./prefetchfs -o prefetch=off "$W/slow" "$W/pf"
MNTS+=("$W/pf")
run_trainer "prefetchfs -o prefetch=off" "$W/pf/$FILE"
umount_wait "$W/pf"

./prefetchfs "$W/slow" "$W/pf"
run_trainer "prefetchfs" "$W/pf/$FILE"
cp "$W/pf/.prefetchfs/stats" "$W/stats.json"
umount_wait "$W/pf"

cat "$W/src/$FILE" >/dev/null
run_trainer "local page cache (floor, no storage)" "$W/src/$FILE"
echo
python3 - "$W/stats.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for st in s["streams"]:
    print("prefetchfs learned: pattern %s, batch %.1f MiB, %d READs, %d hits, %d waits (%.0f ms)"
          % (st["pattern"], st["batch"] / 2**20, st["reads"], st["hits"], st["waits"], st["wait_ms"]))
EOF
} | tee "$W/part1.md"

fusermount3 -u "$W/slow"

# ---- hot data ------------------------------------------------------------
bench/memfs -o "size=$BYTES" "$W/mem" 2>/dev/null
MNTS+=("$W/mem")
set_ra "$W/mem" 1024
# push=off,keep_cache=off: every pass goes through the daemon (as through
# memfs, which also drops the page cache on open), so this measures the
# daemon's hit path, not the kernel's page cache
./prefetchfs -o "max_memory=$(( (BYTES >> 20) * 2 ))M,push=off,keep_cache=off" \
	"$W/src" "$W/pf"
# warm prefetchfs's block cache
bench/trainer --scan "$W/pf/$FILE" >/dev/null
bench/trainer --scan "$W/mem/data" >/dev/null
ratios=()
{
echo
echo "## Hot data: sequential 1 MiB reads of bytes already in memory"
echo
echo "prefetchfs -o push=off,keep_cache=off (every READ reaches the daemon, served from its block"
echo "cache) against bench/memfs (minimal low-level FUSE fs replying from one buffer); both mounts"
echo "have read_ahead_kb=1024 and drop the page cache on open; $ROUNDS rounds of 2 passes, alternated."
echo
printf '| %5s | %14s | %14s | %6s |\n' "round" "prefetchfs MB/s" "memfs MB/s" "ratio"
printf '|%s|%s|%s|%s|\n' "-------" "----------------" "----------------" "--------"
for r in $(seq "$ROUNDS"); do
	a=$(field mb_s "$(bench/trainer --scan --passes 2 "$W/pf/$FILE")")
	b=$(field mb_s "$(bench/trainer --scan --passes 2 "$W/mem/data")")
	ratio=$(python3 -c "print('%.2f' % ($a / $b))")
	ratios+=("$ratio")
	printf '| %5s | %14s | %14s | %6s |\n' "$r" "$a" "$b" "$ratio"
done
med=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo
echo "median prefetchfs / memfs: $med"
} | tee "$W/part2.md"
umount_wait "$W/pf"
fusermount3 -u "$W/mem"

{
	echo "# prefetchfs core benchmark ($(date -u +%Y-%m-%d), $(bench_machine))"
	echo
	echo "Command: bench/core.sh --size $SIZE --latency-ms $LAT --bw-mib $BW --batch $BATCH --compute-ms $COMPUTE --rounds $ROUNDS"
	echo
	cat "$W/part1.md" "$W/part2.md"
} >bench/results/core.md
echo
echo "written: bench/results/core.md"
