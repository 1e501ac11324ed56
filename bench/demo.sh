#!/bin/bash
# bench/demo.sh - what `make demo` runs: a slow store, an unchanged trainer,
# and its data wait with and without prefetchfs.
#
# 1. makes a sample dataset (4 shards of 128 MiB) under a temporary directory,
# 2. serves it from a slow store: bench/slowfs adds 5 ms per READ and caps
#    each READ at 100 MiB/s (READs run concurrently, as on NFS),
# 3. runs examples/simple_trainer.py (8 MiB batches, 40 ms compute each)
#    on the slow store directly, through prefetchfs -o prefetch=off, and
#    through prefetchfs,
# 4. prints data wait %, samples/s and MB/s for each, and what prefetchfs
#    learned (from MOUNTPOINT/.prefetchfs/stats).
# Everything it mounts or starts is unmounted and stopped on exit, Ctrl-C
# included.
set -euo pipefail
cd "$(dirname "$0")/.."

SHARDS=${DEMO_SHARDS:-4}
SHARD_SIZE=${DEMO_SHARD_SIZE:-128M}
LAT=${DEMO_LATENCY_MS:-5}
BW=${DEMO_BW_MIB:-100}

W=$(mktemp -d /tmp/prefetchfs-demo.XXXXXX)
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
trap 'echo; echo "interrupted: cleaning up"; exit 130' INT TERM

mkdir -p "$W/data" "$W/slow" "$W/mnt"
echo "== dataset: $SHARDS shards of $SHARD_SIZE in $W/data"
bench/mkdata "$W/data" "$SHARDS" "$SHARD_SIZE" >/dev/null
cat "$W"/data/* >/dev/null	# only the simulated latency should count

echo "== slow store: bench/slowfs, $LAT ms per READ + size / $BW MiB/s per READ"
bench/slowfs -o "latency_ms=$LAT,bw_mib=$BW" "$W/data" "$W/slow" 2>/dev/null
MNTS+=("$W/slow")
echo 1024 >"/sys/class/bdi/$(mountpoint -d "$W/slow")/read_ahead_kb" 2>/dev/null || true

trainer() {
	python3 examples/simple_trainer.py --batch 8M --compute-ms 40 "$1"
}
field() {
	sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"
}
row() {
	printf '%-34s %10s %10s %8s\n' "$1" "$(field data_wait_pct "$2")" \
		"$(field samples_s "$2")" "$(field mb_s "$2")"
}

echo "== trainer: examples/simple_trainer.py, 8 MiB batches, 40 ms compute"
direct=$(trainer "$W/slow")
./prefetchfs -o prefetch=off "$W/slow" "$W/mnt"
MNTS+=("$W/mnt")
off=$(trainer "$W/mnt")
fusermount3 -u "$W/mnt"
sleep 0.3
./prefetchfs "$W/slow" "$W/mnt"
on=$(trainer "$W/mnt")
cp "$W/mnt/.prefetchfs/stats" "$W/stats.json"
fusermount3 -u "$W/mnt"

echo
printf '%-34s %10s %10s %8s\n' "reading the dataset" "data wait%" "samples/s" "MB/s"
row "slow store directly" "$direct"
row "prefetchfs -o prefetch=off" "$off"
row "prefetchfs" "$on"
echo
python3 - "$W/stats.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
t = s["totals"]
print("prefetchfs learned (from .prefetchfs/stats):")
for st in s["streams"]:
    print("  %-18s %-10s batch %5.1f MiB   READs %5d  hits %5d  waits %4d"
          % (st["file"], st["pattern"], st["batch"] / 2**20, st["reads"], st["hits"], st["waits"]))
print("  fetched %d MiB, pushed to the page cache %d MiB, peak memory %d MiB"
      % (t["bytes_fetched"] >> 20, t["bytes_pushed"] >> 20, t["memory_used"] >> 20))
EOF
