#!/bin/bash
# bench/warm.sh [NFILES [KIB]] - a warm-up of a tree into the disk cache,
# two ways, side by side in one run over the same store far away (nginx's
# JSON index behind bench/delayproxy: 50 ms first byte, 64 MiB/s a
# connection), each on a fresh mount and a fresh cache_dir:
#   tar      the workaround before prefetchfs-warm: tar cf - -C MNT train
#            | wc -c (every byte read through the page cache, one file at
#            a time)
#   warm     prefetchfs-warm MNT train (the daemon reads the files, as
#            many at once as the fetch slots allow; no byte through the
#            page cache)
#   again    prefetchfs-warm a second time on the warm mount (fetches
#            nothing)
# and prints the seconds, the rate and the GETs of data each made.
# Default: 400 files of 256 KiB (100 MiB).
set -u
. "$(dirname "$0")/../tests/lib.sh"
. "$(dirname "$0")/../tests/servers.sh"
. "$(dirname "$0")/lib.sh"
NFILES=${1:-400}
KIB=${2:-256}
need_tools "$TOP/prefetchfs-warm" "$TOP/bench/delayproxy"

SRC=$WORK/src
mkdir -p "$SRC/train"
python3 - "$SRC/train" "$NFILES" "$KIB" <<'PY'
import os, sys
d, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    with open(os.path.join(d, "s%05d.jpg" % i), "wb") as f:
        f.write(os.urandom(kib * 1024))
PY
MB=$((NFILES * KIB / 1024))
nginx_start "$SRC" --json >/dev/null || exit 1
delayproxy_start "127.0.0.1:$NGINX_PORT" 50 $((64 << 20)) >/dev/null || exit 1
gets() { grep -c '"GET /[^ ]*[^/] HTTP' "$NGINX_DIR/access.log"; }

# run NAME CACHE CMD...: CMD on the mount of cache dir CACHE; one row
run() {
	local name=$1 cache=$2 t0 t1 g0 s
	shift 2
	g0=$(gets)
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>"$WORK/err" || { echo "$name failed: $(cat "$WORK/err")"; return 1; }
	t1=$(date +%s.%N)
	s=$(echo "$t1 - $t0" | bc -l)
	printf '%-6s %8.2f s %8.1f MiB/s %6d GETs\n' "$name" "$s" \
		"$(echo "$MB / $s" | bc -l)" $(($(gets) - g0))
}

echo "bench/warm.sh: $NFILES files of $KIB KiB ($MB MiB), store: $DELAY_DESC"
echo "machine: $(bench_machine)"
M=$WORK/mnt
pf_mount "$DELAY_URL/" "$M" -o cache_dir=$WORK/c1 || exit 1
run tar "$WORK/c1" bash -c 'tar cf - -C "$1" train | wc -c' _ "$M"
pf_umount "$M"
pf_mount "$DELAY_URL/" "$M" -o cache_dir=$WORK/c2 || exit 1
run warm "$WORK/c2" "$TOP/prefetchfs-warm" -q "$M" train
run again "$WORK/c2" "$TOP/prefetchfs-warm" -q "$M" train
pf_umount "$M"
finish
