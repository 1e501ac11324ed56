#!/bin/bash
# bench/shuffle.sh - shuffled training over a remote store, side by side in
# one run (issue 12, item 5; issue 13's hints): a local copy, prefetchfs
# without and with a disk cache, prefetchfs with declared order, and
# rclone's full VFS cache.
#
#   make && make bench && bench/shuffle.sh [--quick | --smoke] [options]
#
# About 7 minutes with every system on 2 cores (6.4 measured, loaded),
# --quick about 3, --smoke about 1.
#
# The store: nginx serving the data set from local disk (in the page
# cache) behind bench/delayproxy: --latency-ms (default 50) before the
# first byte of every response, --bw (default 64M) per second per
# connection.  Two such stores over the same data directory, each nginx
# behind its own delayproxy with the same settings: the prefetchfs systems
# read one with nginx's JSON index (autoindex_format json: each file's
# size and mtime, so an open needs no HEAD, issue 12 item 2), rclone one
# with the HTML index (its :http: backend parses HTML only).  A system's
# requests and bytes are counted at its own proxy.
# Trainers (PyTorch, /usr/bin/python3):
#   tree     examples/folder_loader.py: a DataLoader(shuffle=True) over an
#            ImageFolder tree (--files files of --file-size in 10 class
#            directories), batches of 32, 4 workers, 50 ms compute each
#   records  examples/torch_loader.py --shuffle: random records of
#            --file-size of one file of --files records, same loader
#   inorder  examples/folder_loader.py --in-order: 4 workers, each reading
#            its own directory of --inorder-files files of 256 KiB in name
#            order, batches of 8, 50 ms compute (192 files: an epoch of
#            about 5 s of compute, so that its start, the listing, the
#            first file and learning the order, does not dominate it)
#   inorder48  the same with 48 files per directory (an epoch of 1.2 s of
#            compute: the start's share; earlier runs' default), local and
#            prefetchfs only; not in --quick, whose in-order epoch is short
#   twice    a tree like the first (files of 96 MiB / --files if the tree
#            is smaller than 96 MiB), with the disk cache's cache_size
#            half of it, max_memory 24M and keep_cache=off (so that reads
#            reach the disk tier, not the kernel's page cache or the
#            daemon's memory): the data set twice the cache, reshuffled
#            every epoch; the background fill keeps a stable subset of it
#            on disk (the note says which part)
#            (the cache_dir system, prefetchfs with the same max_memory
#            and keep_cache=off but no cache_dir, and the floor); reports
#            the disk-cache hit rate
# Epochs: 1 and 2 of one mount, then "remount": unmount, mount again (the
# same cache directory where there is one) and one more epoch; every epoch
# is a new random order.  inorder and inorder48: epochs 1 and 2.
# Systems (each a fresh mount per trainer):
#   local      the same files on local disk, in the page cache: the floor
#   prefetchfs prefetchfs, its defaults
#   cache_dir  prefetchfs -o cache_dir=DIR (if this build has cache_dir)
#   hints      prefetchfs, no cache_dir, -o max_memory a third of the tree
#              (issue 13), trainers with --hints (if examples/
#              prefetchfs_hints.py exists and the mount has
#              .prefetchfs/plan; records: if torch_loader.py has --hints)
#   rclone     rclone mount of an :http: remote, --vfs-cache-mode full
#              (its cache directory kept across the remount)
# Every epoch is checked: the trainers' order-independent digest of the
# bytes read must equal the local copy's (column "bytes").
#
# Output: a table system x trainer x epoch: data wait % (= (wall -
# compute) / wall), MB/s, the difference to the local copy in points,
# store requests, bytes the store sent / bytes read, disk-cache hit rate,
# the daemon's CPU seconds and peak RSS (of the mount: /proc before its
# unmount); written to OUT/shuffle.md and OUT/shuffle.tsv.  Exit status 1
# if a digest differed or a run failed.
#
# Options:
#   --quick           400 files, 32 in-order files per dir, no inorder48
#   --smoke           40 files, trainers tree and twice only
#                     (a check that the benchmark works, not figures)
#   --files N         files of the tree and records of the file (default 1500)
#   --file-size SIZE  bytes per file and record (default 110K)
#   --inorder-files N files of 256 KiB per in-order directory (default 192)
#   --latency-ms MS   first-byte latency of every response (default 50)
#   --bw RATE         bandwidth per connection (default 64M)
#   --compute-ms MS   compute per batch (default 50)
#   --workers N       DataLoader workers (default 4)
#   --systems "..."   subset of "local prefetchfs cache_dir hints rclone"
#   --trainers "..."  subset of "tree records inorder inorder48 twice"
#   --pf-opts OPTS    more -o options for the prefetchfs systems (e.g.
#                     max_inflight=64)
#   --out DIR         where the results go (default bench/results)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ARGS="$*"
FILES=1500
FSIZE=110K
INORDER=192
INORDER_SHORT=48
PF_OPTS=""
LAT=50
BW=64M
COMPUTE=50
WORKERS=4
BATCH=32
SYSTEMS="local prefetchfs cache_dir hints rclone"
TRAINERS="tree records inorder inorder48 twice"
OUT=bench/results
PRESET=default
TMO=900
usage_err() { echo "bench/shuffle.sh: $* (see --help)" >&2; exit 2; }
need_arg() { [ $# -ge 2 ] || usage_err "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) PRESET=quick; FILES=400; INORDER=32; TMO=300; shift ;;
	--smoke) PRESET=smoke; FILES=40; INORDER=4; TMO=60; shift ;;
	--files) need_arg "$@"; FILES=$2; shift 2 ;;
	--file-size) need_arg "$@"; FSIZE=$2; shift 2 ;;
	--inorder-files) need_arg "$@"; INORDER=$2; shift 2 ;;
	--latency-ms) need_arg "$@"; LAT=$2; shift 2 ;;
	--bw) need_arg "$@"; BW=$2; shift 2 ;;
	--compute-ms) need_arg "$@"; COMPUTE=$2; shift 2 ;;
	--workers) need_arg "$@"; WORKERS=$2; shift 2 ;;
	--systems) need_arg "$@"; SYSTEMS=$2; shift 2 ;;
	--trainers) need_arg "$@"; TRAINERS=$2; TRAINERS_SET=1; shift 2 ;;
	--out) need_arg "$@"; OUT=$2; shift 2 ;;
	--pf-opts) need_arg "$@"; PF_OPTS=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) usage_err "unknown argument '$1'" ;;
	esac
done
only_of() { # WHAT "VALUES" "ALLOWED"
	local v
	[ -n "$2" ] || usage_err "--$1 is empty"
	for v in $2; do
		[[ " $3 " == *" $v "* ]] || usage_err "--$1: unknown value '$v' (one of: $3)"
	done
}
# (the presets' trainers, unless --trainers came, before or after them;
# --quick: its in-order epoch is already short)
if [ -z "${TRAINERS_SET:-}" ]; then
	case $PRESET in
	quick) TRAINERS="tree records inorder twice" ;;
	smoke) TRAINERS="tree twice" ;;
	esac
fi
only_of systems "$SYSTEMS" "local prefetchfs cache_dir hints rclone"
only_of trainers "$TRAINERS" "tree records inorder inorder48 twice"
for v in "$FILES" "$INORDER" "$WORKERS"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || usage_err "'$v' is not a positive integer"
done
for v in "$LAT" "$COMPUTE"; do
	[[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_err "'$v' is not a number"
done
[[ $FSIZE =~ ^[0-9]+[KM]?$ ]] || usage_err "--file-size '$FSIZE' is not a size (e.g. 110K)"
[[ $BW =~ ^[0-9]+[KMG]?$ ]] || usage_err "--bw '$BW' is not a rate (e.g. 64M)"
# (local is the reference of every comparison and every byte check)
[[ " $SYSTEMS " == *" local "* ]] || SYSTEMS="local $SYSTEMS"

for t in prefetchfs bench/delayproxy bench/mkdata bench/mktree.py; do
	[ -x "$t" ] || { echo "bench/shuffle.sh: $t missing: run 'make && make bench' first" >&2; exit 1; }
done
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null ||
	{ echo "bench/shuffle.sh: nginx missing: run tests/deps.sh" >&2; exit 1; }
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null ||
	{ echo "bench/shuffle.sh: /usr/bin/python3 cannot import torch: apt-get install python3-torch" >&2; exit 1; }

# the test library: temporary dirs, mounts and servers always cleaned up,
# on Ctrl-C and on failure too
. tests/lib.sh
. tests/servers.sh
. bench/lib.sh
set +u
trap 'echo; echo "bench/shuffle.sh: interrupted: unmounting and stopping the servers" >&2; exit 130' INT TERM
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
export RCLONE_CONFIG=$WORK/rclone.conf
: >"$RCLONE_CONFIG"
say() { echo "[shuffle $(($(date +%s) - T0))s] $*" >&2; }
bytes_of() { # SIZE with K/M/G
	local n=${1%[KMG]}
	case $1 in
	*K) echo $((n << 10)) ;; *M) echo $((n << 20)) ;; *G) echo $((n << 30)) ;;
	*) echo "$n" ;;
	esac
}
FBYTES=$(bytes_of "$FSIZE")

# ---- what this build and checkout offer ------------------------------------
declare -A AVAIL
for s in $SYSTEMS; do AVAIL[$s]=""; done
# (the help in a variable: grep -q in a pipe ends it early, and with
# pipefail prefetchfs's SIGPIPE would read as "not built")
PF_HELP=$(./prefetchfs --help 2>&1)
if [[ $PF_HELP != *cache_dir* ]]; then
	AVAIL[cache_dir]="not built (./prefetchfs --help has no cache_dir)"
fi
if [ ! -f examples/prefetchfs_hints.py ]; then
	AVAIL[hints]="not built (no examples/prefetchfs_hints.py)"
fi
if ! command -v rclone >/dev/null; then
	AVAIL[rclone]="not installed (.ci/run installs rclone)"
fi
REC_HINTS=0
grep -q -- '--hints' examples/torch_loader.py && REC_HINTS=1

# ---- the data set ----------------------------------------------------------
D=$WORK/data
mkdir -p "$D"
$PY bench/mktree.py "$D/tree" "$FILES" "$FSIZE" >/dev/null || exit 1
bench/mkdata --seed 3 "$D/records" 1 $((FILES * FBYTES)) >/dev/null || exit 1
RECFILE=records/file-000000.bin
$PY bench/mktree.py --classes 4 --prefix dir- --seed 5 "$D/inorder" $((INORDER * 4)) 256K >/dev/null || exit 1
if [[ " $TRAINERS " == *" inorder48 "* ]]; then
	$PY bench/mktree.py --classes 4 --prefix dir- --seed 7 "$D/inorder48" $((INORDER_SHORT * 4)) 256K >/dev/null || exit 1
fi
find "$D" -type f -exec cat {} + >/dev/null	# the store serves from the page cache
TREE_BYTES=$((FILES * FBYTES))
TWICE_FBYTES=$FBYTES
[ "$TREE_BYTES" -lt $((96 << 20)) ] && TWICE_FBYTES=$(( ((96 << 20) / FILES + 1023) / 1024 * 1024 ))
TWICE_BYTES=$((FILES * TWICE_FBYTES))
TWICE_CACHE=$(( (TWICE_BYTES / 2) >> 20 ))M
if [[ " $TRAINERS " == *" twice "* ]]; then
	$PY bench/mktree.py --seed 9 "$D/twice" "$FILES" "$TWICE_FBYTES" >/dev/null || exit 1
fi
HINTS_MEM=$(( TREE_BYTES / 3 >> 20 ))
[ "$HINTS_MEM" -lt 24 ] && HINTS_MEM=24
HINTS_MEM=${HINTS_MEM}M
say "data set in $D: tree $FILES x $FSIZE in 10 classes ($((TREE_BYTES >> 20)) MiB), records: one file of $FILES x $FSIZE, in-order: 4 dirs x $INORDER x 256K"

# store FORMAT: nginx over $D with the FORMAT index (json or html) behind
# a delayproxy of its own; sets STORE_URL, STORE_PID and STORE_LOG (the
# proxy's)
store() {
	local json=""
	[ "$1" = json ] && json=--json
	nginx_start "$D" $json >/dev/null ||
		{ echo "bench/shuffle.sh: nginx ($1 index) did not start" >&2; exit 1; }
	local up=${NGINX_URL#http://}
	delayproxy_start "${up%/}" "$LAT" "$BW" >/dev/null ||
		{ echo "bench/shuffle.sh: delayproxy ($1 index) did not start" >&2; exit 1; }
	STORE_URL=$DELAY_URL/
	STORE_PID=$DELAY_PID
	STORE_LOG=$DELAY_DIR/log
	say "store ($1 index): nginx behind bench/delayproxy at $STORE_URL: $DELAY_DESC"
}
store json
URL=$STORE_URL PROXY_PID=$STORE_PID PROXY_LOG=$STORE_LOG
RC_URL="" RC_PROXY_PID="" RC_PROXY_LOG=""
if [[ " $SYSTEMS " == *" rclone "* ]] && [ -z "${AVAIL[rclone]}" ]; then
	store html
	RC_URL=$STORE_URL RC_PROXY_PID=$STORE_PID RC_PROXY_LOG=$STORE_LOG
fi

# spawn PIDFILE LOG CMD...: CMD in the background, not a job of this shell
# (lib.sh's cleanup stops jobs before the unmounts)
spawn() {
	local pidf=$1 log=$2
	shift 2
	( "$@" </dev/null >"$log" 2>&1 &
	  echo $! >"$pidf" )
	cat "$pidf"
}

# wait_mount MNT PID: true once MNT is mounted (15 s at most, or PID exits)
wait_mount() {
	local i
	for ((i = 0; i < 300; i++)); do
		mountpoint -q "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# The counter snapshot the trainers take after each epoch (their
# --after-epoch): the proxy's totals and the mount's stats file.
cat >"$WORK/snap.sh" <<'EOF'
#!/bin/bash
# snap.sh OUT: OUT gets "responses bytes_to_clients" of the proxy
# (SNAP_PID, its log SNAP_LOG), OUT.json the stats of SNAP_MNT if set
n0=$(grep -c 'bytes to clients' "$SNAP_LOG")
kill -USR1 "$SNAP_PID"
for ((i = 0; i < 300; i++)); do
	[ "$(grep -c 'bytes to clients' "$SNAP_LOG")" -gt "$n0" ] && break
	sleep 0.01
done
grep 'bytes to clients' "$SNAP_LOG" | tail -1 |
	sed -n 's/.* \([0-9]*\) responses, .* \([0-9]*\) bytes to clients.*/\1 \2/p' >"$1"
if [ -n "$SNAP_MNT" ]; then
	timeout 5 cat "$SNAP_MNT/.prefetchfs/stats" >"$1.json" 2>/dev/null || rm -f "$1.json"
fi
EOF
chmod +x "$WORK/snap.sh"
# (the proxy of the system measured: sys_mount sets them)
export SNAP_PID=$PROXY_PID SNAP_LOG=$PROXY_LOG SNAP_MNT=""
snap() { SNAP_MNT=$1 "$WORK/snap.sh" "$2"; }

# ---- systems ---------------------------------------------------------------
# sys_mount SYS TRAINER MNT: mount SYS on MNT (the cache directory, if any,
# is per trainer, kept for the remount); sets DPID and ROOT (where the data
# set is).  On failure returns 1 with WHY set.
sys_mount() {
	local sys=$1 tr=$2 mnt=$3 log o=""
	WHY=""
	DPID=""
	ROOT=$mnt
	SNAP_PID=$PROXY_PID SNAP_LOG=$PROXY_LOG
	log=$WORK/daemon.$(basename "$mnt").log
	case $sys in
	local)
		ROOT=$D
		return 0
		;;
	prefetchfs|cache_dir|hints)
		case $sys in
		cache_dir) o=cache_dir=$WORK/cache.$tr
			[ "$tr" = twice ] && o=$o,cache_size=$TWICE_CACHE,max_memory=24M,keep_cache=off ;;
		prefetchfs)
			[ "$tr" = twice ] && o=max_memory=24M,keep_cache=off ;;
		hints) o=max_memory=$HINTS_MEM ;;
		esac
		[ -n "$PF_OPTS" ] && o=${o:+$o,}$PF_OPTS
		mkdir -p "$WORK/cache.$tr"
		pf_mount "$URL" "$mnt" ${o:+-o "$o"} >"$log.err" 2>&1 ||
			{ WHY="mount failed: $(grep -m1 -v '^mount of' "$log.err" | cut -c1-120)"; return 1; }
		DPID=$(pf_pid "$mnt")
		if [ "$sys" = hints ] && [ ! -e "$mnt/.prefetchfs/plan" ]; then
			WHY="not built (the mount has no .prefetchfs/plan)"
			pf_umount "$mnt"
			return 1
		fi
		;;
	rclone)
		SNAP_PID=$RC_PROXY_PID SNAP_LOG=$RC_PROXY_LOG
		mkdir -p "$mnt"
		MOUNTS+=("$mnt")
		DPID=$(spawn "$WORK/pid.$(basename "$mnt")" "$log" \
			rclone mount :http: "$mnt" --http-url "$RC_URL" --read-only \
			--vfs-cache-mode full --cache-dir "$WORK/rcache.$tr")
		DAEMON_PIDS+=("$DPID")
		if ! wait_mount "$mnt" "$DPID"; then
			WHY="mount failed: $(grep -m1 -i error "$log" | cut -c1-120)"
			kill "$DPID" 2>/dev/null
			return 1
		fi
		;;
	esac
	for _ in $(seq 100); do
		[ -d "$mnt/tree" ] && return 0
		sleep 0.1
	done
	WHY="mounted, but the data set is not there"
	sys_umount "$mnt"
	return 1
}

sys_umount() { # MNT
	local p=$DPID
	mountpoint -q "$1" || return 0
	fusermount3 -u "$1" 2>/dev/null || { sleep 0.5; fusermount3 -u "$1"; } || return 1
	if [ -n "$p" ] && ! wait_gone "$p" 150; then
		ours "$p" && kill -9 "$p" 2>/dev/null
	fi
	return 0
}

# ---- trainers --------------------------------------------------------------
# run_epochs SYS TRAINER LABEL...: run the trainer on ROOT for one epoch
# per LABEL; for each LABEL, $WORK/r.SYS.TRAINER.LABEL gets the trainer's
# line and (mounts) .snap/.snap.json the counters after it.  The counters
# before the first epoch go to $WORK/r.SYS.TRAINER.LABEL.pre.
run_epochs() {
	local sys=$1 tr=$2 pre labels=("${@:3}") i seed rc=0 hint=() mnt="" line
	local base=$WORK/r.$sys.$tr
	[ "$sys" != local ] && mnt=$ROOT
	pre=$base.${labels[0]}.pre
	[ -n "$mnt" ] && snap "$mnt" "$pre"
	[ "$sys" = hints ] && hint=(--hints --mountpoint "$ROOT")
	case $tr in
	tree|twice|inorder|inorder48)
		local extra=() dir=$tr
		if [ "$tr" = inorder ] || [ "$tr" = inorder48 ]; then
			extra=(--in-order --batch 8)
			hint=()
		fi
		# one process for all the epochs (workers persist, as in
		# training); the snapshot after each names the epoch's label
		printf '%s\n' "${labels[@]}" >"$base.labels"
		seed=11
		[ "${labels[0]}" = remount ] && seed=13	# a fresh order
		local after="$WORK/snap.sh $base.\$(sed -n \${EPOCH}p $base.labels).snap"
		SNAP_MNT=$mnt timeout -k 5 "$TMO" $PY examples/folder_loader.py \
			--epochs "${#labels[@]}" --workers "$WORKERS" --batch "$BATCH" \
			--compute-ms "$COMPUTE" --seed "$seed" --checksum \
			"${extra[@]}" "${hint[@]}" ${mnt:+--after-epoch "$after"} \
			"$ROOT/$dir" >"$base.out" 2>"$base.err" || rc=$?
		i=0
		while read -r line; do
			[[ $line == epoch=* ]] || continue
			echo "$line" >"$base.${labels[i]}"
			i=$((i + 1))
		done <"$base.out"
		;;
	records)
		[ "$sys" = hints ] && [ "$REC_HINTS" = 1 ] || hint=()
		for i in "${!labels[@]}"; do
			seed=$((21 + i))
			[ "${labels[0]}" = remount ] && seed=23
			timeout -k 5 "$TMO" $PY examples/torch_loader.py --shuffle --epochs 1 \
				--workers "$WORKERS" --batch "$BATCH" --compute-ms "$COMPUTE" \
				--record "$FSIZE" --seed "$seed" --checksum "${hint[@]}" \
				"$ROOT/$RECFILE" >"$base.${labels[i]}" 2>"$base.err" || { rc=$?; break; }
			[ -n "$mnt" ] && snap "$mnt" "$base.${labels[i]}.snap"
		done
		;;
	esac
	if [ $rc -ne 0 ]; then
		WHY="trainer failed (exit $rc): $(grep -v '^ ' "$base.err" | tail -1 | cut -c1-110)"
		[ $rc = 124 ] && WHY="trainer hung, killed after $TMO s"
		return 1
	fi
	return 0
}

# ---- the matrix ------------------------------------------------------------
TSV=$WORK/shuffle.tsv
printf 'system\ttrainer\tepoch\twait_pct\tmb_s\tdelta_pts\trequests\tamp\thit_rate\tcpu_s\trss_mib\tbytes\tnote\tdisk_mib\n' >"$TSV"
FAILED=0
# cell SYS TRAINER: every epoch of one system and trainer; rows go to
# $WORK/rows (system trainer epoch file-prefix note cpu rss)
cell() {
	local sys=$1 tr=$2 mnt labels=(1 2) cpu=- rss=- note
	mnt=$WORK/m.$sys.$tr
	if [ "$tr" = twice ] && [ "$sys" != cache_dir ] && [ "$sys" != local ] &&
	   [ "$sys" != prefetchfs ]; then
		return
	fi
	if [ "$tr" = inorder48 ] && [ "$sys" != prefetchfs ] && [ "$sys" != local ]; then
		return
	fi
	# (the floor of twice only where there is a cache_dir row to compare)
	if [ "$tr" = twice ] && [ "$sys" = local ] &&
	   { [[ " $SYSTEMS " != *" cache_dir "* ]] || [ -n "${AVAIL[cache_dir]}" ]; }; then
		return
	fi
	if [ -n "${AVAIL[$sys]}" ]; then
		echo "$sys	$tr	-	-	${AVAIL[$sys]}	-	-" >>"$WORK/rows"
		return
	fi
	say "$sys $tr: epochs ${labels[*]}"
	if ! sys_mount "$sys" "$tr" "$mnt"; then
		[[ $WHY == "not built"* ]] && AVAIL[$sys]=$WHY || FAILED=1
		echo "$sys	$tr	-	-	$WHY	-	-" >>"$WORK/rows"
		return
	fi
	note=""
	run_epochs "$sys" "$tr" "${labels[@]}" || { note=$WHY; FAILED=1; }
	if [ -n "$DPID" ]; then
		cpu=$(daemon_cpu "$DPID")
		rss=$(daemon_hwm "$DPID")
	fi
	sys_umount "$mnt" || note="${note:+$note; }unmount failed"
	for l in "${labels[@]}"; do
		echo "$sys	$tr	$l	$WORK/r.$sys.$tr.$l	$note	${cpu:--}	${rss:--}" >>"$WORK/rows"
	done
	# after a remount: the tree, the records, the tree twice the cache
	[ "$tr" = tree ] || [ "$tr" = records ] || [ "$tr" = twice ] || return
	[ -z "$note" ] || return
	if [ "$sys" = local ]; then
		note="no remount: the page cache"
	elif ! sys_mount "$sys" "$tr" "$mnt"; then
		echo "$sys	$tr	remount	-	remount failed: $WHY	-	-" >>"$WORK/rows"
		FAILED=1
		return
	else
		note=""
	fi
	run_epochs "$sys" "$tr" remount || { note=$WHY; FAILED=1; }
	cpu=- rss=-
	if [ -n "$DPID" ]; then
		cpu=$(daemon_cpu "$DPID")
		rss=$(daemon_hwm "$DPID")
	fi
	[ "$sys" != local ] && { sys_umount "$mnt" || note="${note:+$note; }unmount failed"; }
	echo "$sys	$tr	remount	$WORK/r.$sys.$tr.remount	$note	${cpu:--}	${rss:--}" >>"$WORK/rows"
}

: >"$WORK/rows"
for tr in $TRAINERS; do
	for sys in $SYSTEMS; do
		cell "$sys" "$tr"
	done
done

# ---- report ----------------------------------------------------------------
CMD="bench/shuffle.sh${ARGS:+ $ARGS}"
$PY - "$WORK/rows" "$TSV" "$OUT" <<PY
import json, os, sys
rows_f, tsv, out = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(rows_f) if l.strip()]

def kv(path):
    try:
        t = open(path).read().split()
    except OSError:
        return None
    d = dict(x.split("=", 1) for x in t if "=" in x)
    return d if "data_wait_pct" in d else None

def counters(path):
    try:
        r, b = open(path).read().split()
        return int(r), int(b)
    except (OSError, ValueError):
        return None

def disk_counts(path):
    """hits and misses of the disk cache in a stats file: the first
    object with both keys outside the memory totals and the streams,
    one whose key path names the disk or the cache preferred."""
    try:
        s = json.load(open(path))
    except (OSError, ValueError):
        return None
    found = []
    def walk(o, p):
        if isinstance(o, dict):
            if "hits" in o and "misses" in o and p and p[0] not in ("totals", "streams"):
                found.append((p, o))
            for k, v in o.items():
                walk(v, p + [k])
        elif isinstance(o, list):
            for v in o:
                walk(v, p + ["[]"])
    walk(s, [])
    found.sort(key=lambda f: 0 if any("disk" in k or "cache" in k for k in f[0]) else 1)
    if not found:
        return None
    o = found[0][1]
    return float(o["hits"]), float(o["misses"]), o.get("bytes_cached"), o.get("capacity")

def fill_note(path):
    # the background fill's state in a stats file, when it fills a part
    # of the data set only (a tree larger than the disk tier)
    try:
        f = json.load(open(path)).get("fill") or {}
    except (OSError, ValueError, AttributeError):
        return ""
    if not f.get("part_bytes"):
        return ""
    n = "fill %s: subset %d of %d files, %.0f of %.0f MiB" % (
        f.get("state"), f.get("part_files", 0), f.get("tree_files", 0),
        f["part_bytes"] / 2**20, f.get("bytes_total", 0) / 2**20)
    if f.get("in_tier", -1) >= 0:
        n += ", %.0f MiB on disk" % (f["in_tier"] / 2**20)
    return n

# the local copy: the reference digests and waits
ref = {}
for sysn, tr, ep, pfx, note, cpu, rss in rows:
    if sysn == "local" and pfx != "-":
        d = kv(pfx)
        if d:
            ref[(tr, ep)] = d
            ref.setdefault((tr, "digest"), d.get("digest"))
ref_tr = {}
out_rows = []
bad = 0
for sysn, tr, ep, pfx, note, cpu, rss in rows:
    r = {"system": sysn, "trainer": tr, "epoch": ep, "note": note, "cpu": cpu, "rss": rss,
         "wait": "-", "mbs": "-", "delta": "-", "req": "-", "amp": "-", "hit": "-", "bytes": "-",
         "disk": "-"}
    d = kv(pfx) if pfx != "-" else None
    if d:
        r["wait"] = d["data_wait_pct"]
        r["mbs"] = d["mb_s"]
        loc = ref.get((ref_tr.get(tr, tr), ep)) or ref.get((ref_tr.get(tr, tr), "1"))
        if loc:
            r["delta"] = "%+.1f" % (float(d["data_wait_pct"]) - float(loc["data_wait_pct"]))
        want = ref.get((ref_tr.get(tr, tr), "digest"))
        if want and d.get("digest") == want:
            r["bytes"] = "ok"
        elif want:
            r["bytes"] = "DIFFERENT"
            bad += 1
        # counters: after this epoch minus after the one before (or
        # the snapshot taken before the first epoch of the mount)
        labels = [x[2] for x in rows if x[0] == sysn and x[1] == tr and x[3] != "-"]
        prev = None
        if ep == "remount" or ep == labels[0]:
            prev = pfx + ".pre"
        else:
            prev = pfx.rsplit(".", 1)[0] + "." + labels[labels.index(ep) - 1] + ".snap"
        a, b = counters(prev), counters(pfx + ".snap")
        if a and b:
            r["req"] = str(b[0] - a[0])
            nb = int(d["bytes"])
            r["amp"] = "%.2f" % ((b[1] - a[1]) / nb) if nb else "-"
        a, b = disk_counts(prev + ".json"), disk_counts(pfx + ".snap.json")
        if a and b and (b[0] - a[0]) + (b[1] - a[1]) > 0:
            r["hit"] = "%.2f" % ((b[0] - a[0]) / ((b[0] - a[0]) + (b[1] - a[1])))
        if b and b[2] is not None:
            r["disk"] = "%.0f" % (b[2] / 2**20)
            if b[3]:
                r["disk"] += " / %.0f" % (b[3] / 2**20)
        fn = fill_note(pfx + ".snap.json")
        if fn:
            r["note"] = (r["note"] + "; " if r["note"] else "") + fn
    elif pfx != "-" and not note:
        r["note"] = "no result"
    out_rows.append(r)

with open(tsv, "a") as f:
    for r in out_rows:
        f.write("\t".join([r["system"], r["trainer"], r["epoch"], r["wait"], r["mbs"], r["delta"],
                           r["req"], r["amp"], r["hit"], r["cpu"], r["rss"], r["bytes"], r["note"],
                           r["disk"]]) + "\n")

trname = {"tree": "shuffled file tree", "records": "shuffled records of one file",
          "inorder": "4 readers in name order",
          "inorder48": "4 readers in name order, a short epoch ($INORDER_SHORT files each)",
          "twice": "tree twice the disk cache"}
o = []
o.append("# prefetchfs shuffled-training benchmark (%s, %s)" % ("$(date -u +%Y-%m-%d)", "$(bench_machine)"))
o.append("")
o.append("Command: \`$CMD\` ($PRESET preset).")
o.append("")
o.append("Store: nginx on 127.0.0.1 behind bench/delayproxy, which injects a latency before the "
         "first byte of every response and caps every connection's bandwidth: $DELAY_DESC. "
         "Two of them over the same data directory, each nginx behind its own delayproxy with "
         "these settings: the prefetchfs systems read the one with nginx's JSON index "
         "(autoindex_format json: each file's size and mtime, so that an open pins the version "
         "without a HEAD), rclone the one with the HTML index (its :http: backend parses HTML "
         "only). Requests and bytes are counted at the proxy of the system measured.")
o.append("")
o.append("Data: a tree of $FILES files of $FSIZE in 10 class directories ($((TREE_BYTES >> 20)) MiB); "
         "one file of $FILES records of $FSIZE; 4 directories of $INORDER files of 256 KiB%s. "
         "Trainers (PyTorch DataLoader, $WORKERS workers, $COMPUTE ms compute per batch): "
         "tree = examples/folder_loader.py (shuffle=True, batches of $BATCH); records = "
         "examples/torch_loader.py --shuffle --record $FSIZE (batches of $BATCH); inorder = "
         "folder_loader.py --in-order (each worker its own directory in name order, batches of 8); "
         "twice = a tree of $FILES files of $((TWICE_FBYTES >> 10)) KiB ($((TWICE_BYTES >> 20)) MiB) with "
         "-o cache_size=$TWICE_CACHE,max_memory=24M,keep_cache=off (cache/data = %.2f; keep_cache=off: the kernel's page cache would otherwise hold the data set; "
         "its prefetchfs row: max_memory=24M,keep_cache=off, no cache_dir), reshuffled every epoch; the cache keeps "
         "whole blocks (block_size), so a file's last partial block takes a whole one."
         % (" (inorder48: 4 of $INORDER_SHORT)" if "inorder48" in [r["trainer"] for r in out_rows] else "",
            ${TWICE_CACHE%M} * 2**20 / $TWICE_BYTES))
o.append("")
o.append("Systems: local = the same files on local disk, in the page cache (the floor; its "
         "'remount' row is a third epoch); prefetchfs = defaults%s; cache_dir = -o cache_dir=DIR "
         "(kept for the remount); hints = -o max_memory=$HINTS_MEM (a third of the tree), the "
         "trainer declares its order (examples/prefetchfs_hints.py%s); rclone = \`rclone mount :http: "
         "--vfs-cache-mode full\` (%s; cache kept for the remount)."
         % (" (every prefetchfs system also -o $PF_OPTS)" if "$PF_OPTS" else "",
            "" if $REC_HINTS else "; records without hints: torch_loader.py has no --hints",
            "$(rclone version 2>/dev/null | head -1)"))
o.append("")
o.append("wait %% = (wall - compute) / wall of the epoch (epoch 1 includes starting the workers); "
         "Δ local = wait minus the local copy's in the same epoch, in points; requests = responses "
         "the store sent during the epoch; fetched/read = bytes the store sent (headers included) / "
         "bytes the trainer read; disk hits = the disk cache's hit rate in the epoch and disk MiB = "
         "what it holds at the epoch's end / its capacity (its stats: transport.disk_cache); "
         "CPU s and RSS MiB = the daemon's CPU time and peak resident memory over the mount "
         "(e.g. epochs 1+2); bytes = the trainer's digest equals the local copy's. Other "
         "processes shared the machine (load average %s at the start, %s at the end): compare "
         "within one run only." % ("$LOAD0", " ".join(open("/proc/loadavg").read().split()[:3])))
for tr in dict.fromkeys(r["trainer"] for r in out_rows):
    o.append("")
    o.append("## %s" % trname[tr])
    o.append("")
    o.append("| system | epoch | wait % | MB/s | Δ local | requests | fetched/read | disk hits | disk MiB | CPU s | RSS MiB | bytes | note |")
    o.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in out_rows:
        if r["trainer"] == tr:
            o.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["system"], r["epoch"], r["wait"], r["mbs"], r["delta"], r["req"], r["amp"],
                r["hit"], r["disk"], r["cpu"], r["rss"], r["bytes"], r["note"]))
open(os.path.join(out, "shuffle.md"), "w").write("\n".join(o) + "\n")
sys.exit(1 if bad else 0)
PY
[ $? -eq 0 ] || FAILED=1
cp "$TSV" "$OUT/shuffle.tsv"
cat "$OUT/shuffle.md"
say "written: $OUT/shuffle.md, $OUT/shuffle.tsv"
unmount_all
[ "$FAILED" = 0 ] || { echo "bench/shuffle.sh: a run failed or read wrong bytes (see the table)" >&2; exit 1; }
exit 0
