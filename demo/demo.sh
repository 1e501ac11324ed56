#!/bin/bash
# demo/demo.sh - what `make demo` runs: a dataset in a slow object store,
# an unchanged trainer, and its data wait with and without prefetchfs;
# then a shuffled PyTorch trainer over a tree of small files, without and
# with the disk cache.
#
#   demo/demo.sh [--shards N] [--shard-size SIZE] [--latency-ms MS]
#                 [--bw BYTES_PER_SEC] [--batch SIZE] [--compute-ms MS]
#                 [--tree-files N] [--tree-file-size SIZE]
#                 [--tree-compute-ms MS]
#
# 1. makes a sample dataset (default 3 shards of 256 MiB) in a temporary
#    directory;
# 2. serves it like a remote object store: nginx (Debian) on 127.0.0.1
#    behind bench/delayproxy, which holds the first byte of every response
#    for --latency-ms (default 50) and paces every connection to --bw
#    (default 64M per second);
# 3. mounts http://127.0.0.1:PORT/ with prefetchfs -o prefetch=off, then
#    with prefetchfs, and runs examples/simple_trainer.py (batches of
#    --batch, default 8M, read with read(); --compute-ms, default 40, of
#    "compute" after each) over the mountpoint;
# 4. prints data wait %, samples/s and MB/s for both, and what prefetchfs
#    learned (from MOUNTPOINT/.prefetchfs/stats);
# 5. makes a tree of --tree-files files (default 1500) of --tree-file-size
#    (default 110K) in 10 class directories, serves it with a second nginx,
#    its JSON index (size and mtime of every file: opens need no request),
#    behind a second delayproxy with the same latency and bandwidth;
# 6. runs examples/folder_loader.py (a PyTorch DataLoader, shuffle=True, 4
#    workers, batches of 32, --tree-compute-ms, default 50, of compute
#    per batch, a digest of the bytes read) for epochs 1 and 2 over the
#    local copy (the floor), prefetchfs, and prefetchfs -o cache_dir, then
#    one epoch after unmounting and mounting the cache_dir again;
# 7. prints data wait %, MB/s and whether the bytes equal the local
#    copy's for each epoch (the demo fails if they do not).
# --tree-files 0 skips 5 to 7.  Needs python3-torch (tests/deps.sh).
# Everything it mounts or starts is unmounted and stopped on exit, Ctrl-C
# included, and a failure names the step.  About a minute and a half.
set -euo pipefail
cd "$(dirname "$0")/.."

SHARDS=3
SHARD_SIZE=256M
LAT=50
BW=64M
BATCH=8M
COMPUTE=40
TREE_FILES=1500
TREE_FSIZE=110K
TREE_COMPUTE=50
while [ $# -gt 0 ]; do
	case $1 in
	--shards) SHARDS=$2; shift 2 ;;
	--shard-size) SHARD_SIZE=$2; shift 2 ;;
	--latency-ms) LAT=$2; shift 2 ;;
	--bw) BW=$2; shift 2 ;;
	--batch) BATCH=$2; shift 2 ;;
	--compute-ms) COMPUTE=$2; shift 2 ;;
	--tree-files) TREE_FILES=$2; shift 2 ;;
	--tree-file-size) TREE_FSIZE=$2; shift 2 ;;
	--tree-compute-ms) TREE_COMPUTE=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "demo/demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
for t in prefetchfs bench/delayproxy bench/mkdata; do
	[ -x "$t" ] || { echo "demo/demo.sh: $t missing: run 'make demo'" >&2; exit 1; }
done
command -v nginx >/dev/null || { echo "demo/demo.sh: nginx missing: run tests/deps.sh" >&2; exit 1; }
[[ $TREE_FILES =~ ^[0-9]+$ ]] ||
	{ echo "demo/demo.sh: --tree-files '$TREE_FILES' is not a number" >&2; exit 2; }
if [ "$TREE_FILES" -gt 0 ] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	echo "demo/demo.sh: /usr/bin/python3 cannot import torch: run tests/deps.sh" \
		"(or --tree-files 0)" >&2
	exit 1
fi

# temporary directories, mounts and servers that are always cleaned up,
# on Ctrl-C and on a failed step too (lib.sh's cleanup, which finds the
# mounts made inside $(train ...) through $WORK/mounts)
. tests/lib.sh
. tests/servers.sh
set +u

# step WHAT: what the demo does now, for the line printed when it fails
# (a file: train runs in a subshell)
step() { echo "$1" >"$WORK/step"; }
demo_exit() {
	local rc=$? what
	set +e
	trap '' INT TERM HUP
	what=$(cat "$WORK/step" 2>/dev/null)
	if [ $rc -eq 130 ] || [ $rc -eq 143 ]; then
		echo "demo/demo.sh: interrupted while ${what:-starting}: unmounting and stopping the servers" >&2
	elif [ $rc -ne 0 ]; then
		echo "demo/demo.sh: failed while ${what:-starting} (exit $rc)" >&2
	fi
	cleanup
	exit $rc
}
trap demo_exit EXIT
trap 'echo; exit 130' INT
trap 'exit 143' TERM

step "making the dataset"
mkdir -p "$WORK/www"
echo "== dataset: $SHARDS shards of $SHARD_SIZE in $WORK/www"
bench/mkdata "$WORK/www" "$SHARDS" "$SHARD_SIZE" >/dev/null
cat "$WORK"/www/* >/dev/null	# only the simulated network should count

# (the *_start functions print the server's log when it does not start)
step "starting nginx"
nginx_start "$WORK/www" >"$WORK/start.out" || { cat "$WORK/start.out" >&2; exit 1; }
UP=${NGINX_URL#http://}
step "starting bench/delayproxy"
delayproxy_start "${UP%/}" "$LAT" "$BW" >"$WORK/start.out" || { cat "$WORK/start.out" >&2; exit 1; }
URL=$DELAY_URL/
echo "== object store: nginx behind bench/delayproxy at $URL"
echo "   $DELAY_DESC"

field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
row() {
	printf '%-30s %10s %10s %8s\n' "$1" "$(field data_wait_pct "$2")" \
		"$(field samples_s "$2")" "$(field mb_s "$2")"
}
# train LABEL MNT OPTS: mount, run the trainer, keep the stats, unmount;
# prints the trainer's line.  (A subshell: errexit does not reach here,
# every step is checked.)
train() {
	local out
	echo "== $1: mounting $URL on $2 (-o $3), running the trainer" >&2
	step "mounting $2 ($1)"
	pf_mount "$URL" "$2" -o "$3" >&2 || exit 1
	step "running the trainer on $2 ($1)"
	out=$(python3 examples/simple_trainer.py --batch "$BATCH" \
		--compute-ms "$COMPUTE" "$2") || exit 1
	step "reading $2/.prefetchfs/stats ($1)"
	cp "$2/.prefetchfs/stats" "$WORK/$(basename "$2").json" || exit 1
	step "unmounting $2 ($1)"
	pf_umount "$2" || exit 1
	echo "$out"
}

echo "== trainer: examples/simple_trainer.py, $BATCH batches, $COMPUTE ms compute after each"
off=$(train "prefetchfs -o prefetch=off" "$WORK/off" prefetch=off)
on=$(train "prefetchfs" "$WORK/on" max_memory=2G)

step "printing the report"
echo
printf '%-30s %10s %10s %8s\n' "reading the dataset" "data wait%" "samples/s" "MB/s"
row "prefetchfs -o prefetch=off" "$off"
row "prefetchfs" "$on"
echo
python3 - "$WORK/on.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
t = s["totals"]
tr = s.get("transport", {})
print("prefetchfs learned (from .prefetchfs/stats):")
for st in s["streams"]:
    print("  %-18s %-10s batch %5.1f MiB  window %5.1f MiB  READs %5d  waits %4d (%.0f ms)"
          % (st["file"], st["pattern"], st["batch"] / 2**20, st["window"] / 2**20,
             st["reads"], st["waits"], st["wait_ms"]))
print("  fetched %d MiB in %d ranged GETs, pushed to the page cache %d MiB, memory in use %d MiB"
      % (t["bytes_fetched"] >> 20, tr.get("requests", 0), t["bytes_pushed"] >> 20,
         t["memory_used"] >> 20))
EOF
echo
echo "data wait % = share of the run the trainer waited for data instead of computing"
[ "$TREE_FILES" -gt 0 ] || { step "stopping the mounts"; finish; }

# ---- the shuffled trainer over a file tree -------------------------------
step "making the file tree"
echo
echo "== file tree: $TREE_FILES files of $TREE_FSIZE in 10 class directories in $WORK/tree"
python3 bench/mktree.py "$WORK/tree" "$TREE_FILES" "$TREE_FSIZE" >/dev/null
cat "$WORK"/tree/*/* >/dev/null
step "starting nginx (JSON index)"
nginx_start "$WORK/tree" --json >"$WORK/start.out" || { cat "$WORK/start.out" >&2; exit 1; }
UP=${NGINX_URL#http://}
step "starting bench/delayproxy (JSON index)"
delayproxy_start "${UP%/}" "$LAT" "$BW" >"$WORK/start.out" || { cat "$WORK/start.out" >&2; exit 1; }
TREE_URL=$DELAY_URL/
echo "== object store: nginx with its JSON index (every file's size and mtime: an"
echo "   open needs no request) behind bench/delayproxy at $TREE_URL"
echo "   $DELAY_DESC"
echo "== trainer: examples/folder_loader.py, DataLoader(shuffle=True), 4 workers,"
echo "   batches of 32, $TREE_COMPUTE ms compute after each, a new order every epoch"

# tree_train LABEL MNT OPTS SEED EPOCHS: the trainer over the local copy
# (MNT empty) or over a mount of TREE_URL on MNT with -o OPTS, then the
# unmount; prints its epoch lines (a subshell, as train)
tree_train() {
	local label=$1 mnt=$2 opts=$3 root=$WORK/tree out
	if [ -n "$mnt" ]; then
		echo "== $label: mounting $TREE_URL on $mnt${opts:+ (-o $opts)}, running the trainer" >&2
		step "mounting $mnt ($label)"
		pf_mount "$TREE_URL" "$mnt" ${opts:+-o "$opts"} >&2 || exit 1
		root=$mnt
	else
		echo "== $label: running the trainer on $root" >&2
	fi
	step "running examples/folder_loader.py on $root ($label)"
	# (PyTorch warns about more workers than cores: on a small machine,
	# the point is that 4 workers are what a trainer would use)
	out=$(PYTHONWARNINGS="ignore:This DataLoader will create:UserWarning" \
		/usr/bin/python3 examples/folder_loader.py --workers 4 --batch 32 \
		--compute-ms "$TREE_COMPUTE" --seed "$4" --epochs "$5" --checksum "$root") ||
		exit 1
	if [ -n "$mnt" ]; then
		step "unmounting $mnt ($label)"
		pf_umount "$mnt" || exit 1
	fi
	echo "$out"
}
local_copy=$(tree_train "local copy" "" "" 11 2)
pf_plain=$(tree_train "prefetchfs" "$WORK/tree-pf" "" 11 2)
pf_disk=$(tree_train "prefetchfs -o cache_dir" "$WORK/tree-disk" "cache_dir=$WORK/cache" 11 2)
pf_again=$(tree_train "prefetchfs -o cache_dir, mounted again" "$WORK/tree-disk" \
	"cache_dir=$WORK/cache" 13 1)

step "reading the local copy's digest"
REF=$(field digest "$(head -1 <<<"$local_copy")")
[ -n "$REF" ] || exit 1
step "printing the second report"
BAD=0
# tree_rows LABEL OUTPUT [EPOCH-NAME...]: one row per epoch line
tree_rows() {
	local label=$1 line i=0 names=("${@:3}") bytes
	while read -r line; do
		bytes=DIFFERENT
		[ "$(field digest "$line")" = "$REF" ] && bytes=ok
		[ $bytes = ok ] || BAD=1
		printf '%-40s %-7s %10s %8s %6s\n' "$label" "${names[i]:-$((i + 1))}" \
			"$(field data_wait_pct "$line")" "$(field mb_s "$line")" "$bytes"
		i=$((i + 1))
	done < <(grep '^epoch=' <<<"$2")
}
echo
printf '%-40s %-7s %10s %8s %6s\n' "shuffled file tree" "epoch" "data wait%" "MB/s" "bytes"
tree_rows "local copy" "$local_copy"
tree_rows "prefetchfs" "$pf_plain"
tree_rows "prefetchfs -o cache_dir" "$pf_disk"
tree_rows "prefetchfs -o cache_dir, mounted again" "$pf_again" 3
echo
echo "bytes ok = the digest of what the trainer read equals the local copy's"
step "checking the bytes read"
[ $BAD = 0 ] || { echo "demo/demo.sh: a trainer read other bytes than the local copy's" >&2; exit 1; }
step "stopping the mounts"
finish
