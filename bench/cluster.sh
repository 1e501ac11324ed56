#!/bin/bash
# bench/cluster.sh - many nodes, one fetch (issue 30): N "nodes" on this
# machine share one origin, with the shared cache tier (-o shared_cache)
# and without it, side by side in one run.
#
#   make && make bench && bench/cluster.sh [--quick] [options]
#
# About 5 minutes by default on 2 cores, --quick about 2.
#
# The origin: nginx serving the data set (from the page cache, JSON index)
# behind bench/delayproxy, --latency-ms (default 50) before the first byte
# of every response and --bw (default 64M) per second per connection;
# origin bytes are the file bytes nginx sent (its access log).  A node is
# a prefetchfs mount of the origin (max_memory 512M) and, with the tier,
# its own memcached on its own address (127.0.0.2, .3, ...; 64 MiB) named
# by -o shared_self; every node is given the same list and secret.  On
# each node runs a trainer, examples/folder_loader.py --rank R
# --world-size N (a DistributedSampler: each epoch a new permutation of
# the tree, the ranks' shares disjoint; --workers 2, batches of 16, 30 ms
# of compute each), for --epochs epochs (default 3); the ranks wait for
# each other at the end of every epoch, as ranks of a training job do.
# Systems, each for N in --nodes (default "1 2 4"):
#   local     the trainers on a local copy (page cache): the floor
#   alone     each node its own prefetchfs, no tier (its defaults: the
#             background fill reads the whole tree on every node)
#   cache_dir each node alone with a disk cache (-o cache_dir)
#   tier      the nodes with the shared tier
#   tier_small  the tier with max_memory a quarter of the tree (32M at
#             least): no background fill, every epoch's reads come from
#             the tier, the data set's home after epoch 1
#   tier_hints  tier_small with trainers that declare each epoch's order
#             of their rank (folder_loader.py --hints: a plan per node),
#             so that the node fetches ahead of its reader, from the tier
#   alone_small (not by default) each node alone with that max_memory:
#             every epoch from the origin
# Then, with the tier, --same N nodes read one file of --same-size
# (default 64M) at the same moment (leases); and in the tier_small run of
# the largest N, one memcached (the last node's) is killed in the middle
# of epoch 2 (--no-kill: not).
# Every epoch is checked: each rank's order-independent digest of the
# bytes read must equal the local copy's.
#
# Output: per system, N and epoch: origin bytes / data set bytes, and
# each node's data wait % (= (wall - compute) / wall) with, beside it, the
# local copy's for the same rank (points of difference: the worst node's).
# Written to OUT/cluster.md and OUT/cluster.tsv; exit status 1 if a digest
# differed or a run failed.
#
# Options:
#   --quick           --nodes "1 2", 600 files, epochs 2
#   --nodes "..."     node counts (default "1 2 4")
#   --files N         files of the tree (default 1200)
#   --file-size SIZE  bytes per file (default 64K)
#   --epochs N        (default 3)
#   --latency-ms MS   first-byte latency of the origin (default 50)
#   --bw RATE         the origin's bandwidth per connection (default 64M)
#   --systems "..."   subset of "alone cache_dir tier tier_small tier_hints
#                     alone_small" (default all but alone_small; local
#                     always runs)
#   --same N          nodes of the one-file run (default 4; 0: none)
#   --same-size SIZE  its file (default 64M; the issue's figure: 256M)
#   --no-kill         no memcached killed in epoch 2
#   --timeout-ms MS   the tier's shared_timeout (default 100: here N nodes,
#                     their memcached servers and trainers share 2 cores,
#                     and the scheduler is the network; on a LAN the
#                     default 5 holds)
#   --pf-opts OPTS    more -o options for every prefetchfs (@N: the node's
#                     number from 0, e.g. trace=/tmp/t.@N.json)
#   --mc-threads N    memcached -t (worker threads) of every node
#                     (default 2)
#   --out DIR         where the results go (default bench/results)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ARGS="$*"
NODES="1 2 4"
FILES=1200
FSIZE=64K
EPOCHS=3
LAT=50
BW=64M
SYSTEMS="alone cache_dir tier tier_small tier_hints"
SAME=4
SAME_SIZE=64M
KILL=1
TIMEOUT_MS=100
PF_OPTS=""
MC_THREADS=2
OUT=bench/results
WORKERS=2
BATCH=16
COMPUTE=30
TMO=300
usage_err() { echo "bench/cluster.sh: $* (see --help)" >&2; exit 2; }
need_arg() { [ $# -ge 2 ] || usage_err "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) NODES="1 2"; FILES=600; EPOCHS=2; SAME=2; shift ;;
	--nodes) need_arg "$@"; NODES=$2; shift 2 ;;
	--files) need_arg "$@"; FILES=$2; shift 2 ;;
	--file-size) need_arg "$@"; FSIZE=$2; shift 2 ;;
	--epochs) need_arg "$@"; EPOCHS=$2; shift 2 ;;
	--latency-ms) need_arg "$@"; LAT=$2; shift 2 ;;
	--bw) need_arg "$@"; BW=$2; shift 2 ;;
	--systems) need_arg "$@"; SYSTEMS=$2; shift 2 ;;
	--same) need_arg "$@"; SAME=$2; shift 2 ;;
	--same-size) need_arg "$@"; SAME_SIZE=$2; shift 2 ;;
	--no-kill) KILL=0; shift ;;
	--timeout-ms) need_arg "$@"; TIMEOUT_MS=$2; shift 2 ;;
	--pf-opts) need_arg "$@"; PF_OPTS=$2; shift 2 ;;
	--mc-threads) need_arg "$@"; MC_THREADS=$2; shift 2 ;;
	--out) need_arg "$@"; OUT=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) usage_err "unknown argument '$1'" ;;
	esac
done
for v in $NODES "$FILES" "$EPOCHS"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || usage_err "'$v' is not a positive integer"
done
[[ $SAME =~ ^[0-9]+$ ]] || usage_err "--same '$SAME' is not a number"
for s in $SYSTEMS; do
	[[ " alone cache_dir tier tier_small tier_hints alone_small " == *" $s "* ]] ||
		usage_err "--systems: unknown '$s' (alone, cache_dir, tier, tier_small, tier_hints, alone_small)"
done
for v in $NODES $SAME; do
	[ "$v" -le 8 ] || usage_err "at most 8 nodes (127.0.0.2 to .9)"
done
for t in prefetchfs bench/delayproxy bench/mktree.py; do
	[ -x "$t" ] || { echo "bench/cluster.sh: $t missing: run 'make && make bench' first" >&2; exit 1; }
done
command -v memcached >/dev/null || [ -x /usr/bin/memcached ] ||
	{ echo "bench/cluster.sh: memcached missing: run tests/deps.sh" >&2; exit 1; }
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null ||
	{ echo "bench/cluster.sh: /usr/bin/python3 cannot import torch: apt-get install python3-torch" >&2; exit 1; }

# the test library: temporary dirs, mounts and servers always cleaned up
. tests/lib.sh
. tests/servers.sh
. bench/lib.sh
set +u
trap 'echo; echo "bench/cluster.sh: interrupted: unmounting and stopping the servers" >&2; exit 130' INT TERM
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
say() { echo "[cluster $(($(date +%s) - T0))s] $*" >&2; }
# cpu_jiffies: BUSY:TOTAL ticks of every core so far (/proc/stat)
cpu_jiffies() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 ":" $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat
}
bytes_of() {
	local n=${1%[KMG]}
	case $1 in
	*K) echo $((n << 10)) ;; *M) echo $((n << 20)) ;; *G) echo $((n << 30)) ;;
	*) echo "$n" ;;
	esac
}

# ---- the data set and the origin ---------------------------------------------
D=$WORK/data
mkdir -p "$D"
$PY bench/mktree.py "$D/tree" "$FILES" "$FSIZE" >/dev/null || exit 1
SAME_BYTES=$(bytes_of "$SAME_SIZE")
[ "$SAME" -gt 0 ] && { head -c "$SAME_BYTES" /dev/urandom >"$D/same.bin" || exit 1; }
find "$D" -type f -exec cat {} + >/dev/null	# the origin serves from the page cache
TREE=$(find "$D/tree" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
SMALL=$((TREE / 4 >> 20))
[ "$SMALL" -lt 32 ] && SMALL=32
SMALL=${SMALL}M
nginx_start "$D" --json >/dev/null || { echo "bench/cluster.sh: nginx did not start" >&2; exit 1; }
delayproxy_start "127.0.0.1:$NGINX_PORT" "$LAT" "$(bytes_of "$BW")" >/dev/null ||
	{ echo "bench/cluster.sh: delayproxy did not start" >&2; exit 1; }
URL=$DELAY_URL/
say "origin: nginx behind bench/delayproxy ($DELAY_DESC); tree: $FILES x $FSIZE ($((TREE >> 20)) MiB)"
SECRET=$WORK/secret
tier_secret "$SECRET"

# origin_bytes [PATH-REGEX]: file bytes nginx sent so far (not listings)
origin_bytes() {
	awk -v re="${1:-.}" '$6 == "\"GET" && $7 !~ /\/$/ && $7 ~ re { s += $10 } END { print s + 0 }' \
		"$NGINX_DIR/access.log"
}

# The barrier each rank's trainer runs after an epoch (--after-epoch): the
# last rank to arrive notes the origin's bytes and lets the others go.
cat >"$WORK/barrier.sh" <<'EOF'
#!/bin/bash
# barrier.sh DIR N ACCESS_LOG (EPOCH and RANK from folder_loader.py)
d=$1
touch "$d/e$EPOCH.r$RANK"
if [ "$(ls "$d" | grep -c "^e$EPOCH\.r")" -ge "$2" ]; then
	awk '$6 == "\"GET" && $7 !~ /\/$/ && $7 ~ /^\/tree\// { s += $10 } END { print s + 0 }' "$3" >"$d/origin.$EPOCH.tmp"
	mv "$d/origin.$EPOCH.tmp" "$d/origin.$EPOCH"
fi
while [ ! -e "$d/origin.$EPOCH" ]; do sleep 0.02; done
EOF
chmod +x "$WORK/barrier.sh"

# ---- one run: N nodes of a system ------------------------------------------------
MCS=()
MCDIRS=()
# nodes_up SYS N: N mounts (and memcached servers for the tier); sets
# ROOTS, DPIDS
nodes_up() {
	local sys=$1 n=$2 i o list
	ROOTS=()
	DPIDS=()
	MCS=()
	MCDIRS=()
	if [ "$sys" = local ]; then
		for ((i = 0; i < n; i++)); do ROOTS+=("$D"); done
		return 0
	fi
	if [[ $sys == tier* ]]; then
		for ((i = 0; i < n; i++)); do
			memcached_start "127.0.0.$((i + 2))" -t "$MC_THREADS" >/dev/null || return 1
			MCS+=("$MC_SERVER")
			MCDIRS+=("$MC_DIR")
		done
		list=$(IFS=,; echo "${MCS[*]}")
	fi
	for ((i = 0; i < n; i++)); do
		o=max_memory=512M
		case $sys in
		*_small|tier_hints) o=max_memory=$SMALL ;;
		esac
		case $sys in
		cache_dir) o=$o,cache_dir=$WORK/cache.$n.$i,cache_size=256M ;;
		tier*) o=$o,shared_cache=$list,shared_secret=$SECRET,shared_self=${MCS[$i]},shared_timeout=$TIMEOUT_MS ;;
		esac
		[ -n "$PF_OPTS" ] && o=$o,${PF_OPTS//@N/$i}
		pf_mount "$URL" "$WORK/m.$sys.$n.$i" -o "$o" >"$WORK/mount.log" 2>&1 ||
			{ cat "$WORK/mount.log" >&2; return 1; }
		ROOTS+=("$WORK/m.$sys.$n.$i")
		DPIDS+=("$(pf_pid "$WORK/m.$sys.$n.$i")")
	done
}

nodes_down() {
	local m d
	for m in "${ROOTS[@]}"; do
		[ "$m" = "$D" ] || pf_umount "$m" || echo "unmount of $m failed" >&2
	done
	for d in "${MCDIRS[@]}"; do server_stop "$d"; done
	MCDIRS=()
}

# run SYS N: the trainers of N nodes, EPOCHS epochs; results in
# $WORK/r.SYS.N.RANK (their lines) and $WORK/b.SYS.N/origin.EPOCH
FAILED=0
run() {
	local sys=$1 n=$2 i bar pids=() killer="" rc pfc mcc d s0 s1 hints=()
	bar=$WORK/b.$sys.$n
	say "$sys, $n node(s)"
	mkdir -p "$bar"
	nodes_up "$sys" "$n" || { say "$sys $n: the nodes did not come up"; FAILED=1; nodes_down; return 1; }
	origin_bytes '^/tree/' >"$bar/origin.0"
	s0=$(cpu_jiffies)
	[ "$sys" = tier_hints ] && hints=(--hints)
	for ((i = 0; i < n; i++)); do
		timeout -k 5 "$TMO" $PY examples/folder_loader.py --epochs "$EPOCHS" \
			--workers "$WORKERS" --batch "$BATCH" --compute-ms "$COMPUTE" \
			--seed 7 --checksum --rank "$i" --world-size "$n" "${hints[@]}" \
			--after-epoch "$WORK/barrier.sh $bar $n $NGINX_DIR/access.log" \
			"${ROOTS[$i]}/tree" >"$WORK/r.$sys.$n.$i" 2>"$WORK/r.$sys.$n.$i.err" &
		pids+=($!)
	done
	# one memcached killed in the middle of epoch 2, in the largest
	# tier_small run
	if [ "$sys" = tier_small ] && [ "$KILL" = 1 ] && [ "$n" = "$NMAX" ] && [ "$n" -gt 1 ] && [ "$EPOCHS" -ge 2 ]; then
		(
			while [ ! -e "$bar/origin.1" ]; do sleep 0.05; done
			sleep 1
			kill -9 "$(cat "${MCDIRS[$((n - 1))]}/pid")" 2>/dev/null
			echo "killed $(date +%s.%N)" >"$bar/killed"
		) &
		killer=$!
	fi
	for ((i = 0; i < n; i++)); do
		wait "${pids[$i]}"
		rc=$?
		if [ $rc -ne 0 ]; then
			say "$sys $n: rank $i failed (exit $rc): $(tail -1 "$WORK/r.$sys.$n.$i.err")"
			FAILED=1
		fi
	done
	s1=$(cpu_jiffies)
	[ -n "$killer" ] && { kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null; }
	pfc=0
	mcc=0
	for ((i = 0; i < n; i++)); do
		[ "$sys" = local ] && break
		stats_json "${ROOTS[$i]}" >"$WORK/s.$sys.$n.$i.json" 2>/dev/null
		pfc=$(echo "$pfc + $(daemon_cpu "${DPIDS[$i]}")" | bc)
	done
	for d in "${MCDIRS[@]}"; do
		mcc=$(echo "$mcc + $(daemon_cpu "$(cat "$d/pid")" || echo 0)" | bc)
	done
	echo "$sys	$n	$pfc	$mcc	$s0	$s1" >>"$WORK/cpu"
	nodes_down
}

NMAX=0
for n in $NODES; do [ "$n" -gt "$NMAX" ] && NMAX=$n; done
for n in $NODES; do
	run local "$n"
	for s in $SYSTEMS; do run "$s" "$n"; done
done

# ---- one file, N nodes, the same moment ---------------------------------------
SAME_LINE=""
if [ "$SAME" -gt 0 ] && [[ " $SYSTEMS " == *" tier "* ]]; then
	say "tier: $SAME nodes read one file of $SAME_SIZE at the same moment"
	if nodes_up tier "$SAME"; then
		before=$(origin_bytes '^/same\.bin$')
		pids=()
		for ((i = 0; i < SAME; i++)); do
			cmp "$D/same.bin" "${ROOTS[$i]}/same.bin" >"$WORK/same.$i" 2>&1 &
			pids+=($!)
		done
		bad=0
		for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
		after=$(origin_bytes '^/same\.bin$')
		SAME_LINE=$(awk -v b=$((after - before)) -v f="$SAME_BYTES" -v n="$SAME" -v bad=$bad \
			'BEGIN { printf "%d nodes read one file of %.0f MiB at the same moment: the origin sent %.2f x the file (without the tier: %d x); %s", n, f / 1048576, b / f, n, bad ? bad " read(s) differed" : "every byte exact" }')
		[ $bad -eq 0 ] || FAILED=1
		for ((i = 0; i < SAME; i++)); do
			stats_json "${ROOTS[$i]}" >"$WORK/s.same.$SAME.$i.json" 2>/dev/null
		done
		SAME_LINE="$SAME_LINE; leases: $($PY - "$WORK" "$SAME" <<'PY'
import json, os, sys
work, n = sys.argv[1], int(sys.argv[2])
tot = {}
for r in range(n):
    try:
        sc = json.load(open(os.path.join(work, "s.same.%d.%d.json" % (n, r))))["transport"]["shared_cache"]
    except (OSError, ValueError, KeyError):
        continue
    for k in ("leases_won", "leases_waited", "leases_timed_out", "store_dropped", "stored", "bypassed", "staging_waits"):
        tot[k] = tot.get(k, 0) + sc.get(k, 0)
print(", ".join("%s %d" % (k.replace("leases_", ""), v) for k, v in tot.items()))
PY
)"
		nodes_down
	else
		SAME_LINE="the one-file run did not come up"
		FAILED=1
		nodes_down
	fi
	say "$SAME_LINE"
fi

# ---- the table ---------------------------------------------------------------
TSV=$OUT/cluster.tsv
MD=$OUT/cluster.md
$PY - "$WORK" "$TREE" "$EPOCHS" "$NODES" "local $SYSTEMS" "$TSV" >"$WORK/table.md" <<'PY' || FAILED=1
import json, os, re, sys
work, tree, epochs, nodes, systems, tsv = sys.argv[1:7]
tree, epochs = int(tree), int(epochs)
nodes = [int(n) for n in nodes.split()]
def lines(sys_, n, r):
    try:
        return {int(m.group(1)): dict(kv.split("=", 1) for kv in l.split())
                for l in open(os.path.join(work, "r.%s.%d.%d" % (sys_, n, r)))
                for m in [re.match(r"epoch=(\d+)", l)] if m}
    except OSError:
        return {}
def origin(sys_, n, e):
    try:
        a = int(open(os.path.join(work, "b.%s.%d" % (sys_, n), "origin.%d" % e)).read())
        b = int(open(os.path.join(work, "b.%s.%d" % (sys_, n), "origin.%d" % (e - 1))).read())
        return a - b
    except (OSError, ValueError):
        return None
bad = 0
out = open(tsv, "w")
out.write("system\tnodes\tepoch\torigin_x\twait_pct\tlocal_wait_pct\tworst_pts\tdigests\n")
print("| system | nodes | epoch | origin / data set | each node's data wait % (local copy's) | worst node vs local, points | bytes |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for n in nodes:
    loc = [lines("local", n, r) for r in range(n)]
    for s in systems.split():
        runs = [lines(s, n, r) for r in range(n)]
        for e in range(1, epochs + 1):
            waits, locw, ok = [], [], True
            for r in range(n):
                x, l = runs[r].get(e), loc[r].get(e)
                if not x or not l:
                    ok = False
                    continue
                waits.append(float(x["data_wait_pct"]))
                locw.append(float(l["data_wait_pct"]))
                if x.get("digest") != l.get("digest"):
                    ok = False
            if len(waits) < n:
                ok = False
            bad += not ok
            o = origin(s, n, e) if s != "local" else None
            ox = "-" if o is None else "%.2f" % (o / tree)
            worst = max((w - l for w, l in zip(waits, locw)), default=float("nan"))
            cells = ", ".join("%.1f (%.1f)" % (w, l) for w, l in zip(waits, locw))
            print("| %s | %d | %d | %s | %s | %s | %s |" % (
                s, n, e, ox, cells or "-", "-" if s == "local" else "%+.1f" % worst,
                "exact" if ok else "FAILED"))
            out.write("%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n" % (
                s, n, e, ox, ",".join("%.1f" % w for w in waits),
                ",".join("%.1f" % l for l in locw),
                "-" if s == "local" else "%.1f" % worst, "ok" if ok else "bad"))
        # the whole run's origin bytes
        if s != "local":
            tot = [origin(s, n, e) for e in range(1, epochs + 1)]
            if None not in tot:
                print("| %s | %d | all | %.2f | | | |" % (s, n, sum(tot) / tree))
sys.exit(1 if bad else 0)
PY
{
	echo "# bench/cluster.sh"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(bench_machine); load before $LOAD0"
	echo
	echo "    bench/cluster.sh $ARGS"
	echo
	echo "Origin: $DELAY_DESC. Tree: $FILES files of $FSIZE ($((TREE >> 20)) MiB), $EPOCHS epochs, trainers examples/folder_loader.py --workers $WORKERS --batch $BATCH --compute-ms $COMPUTE, one per node (DistributedSampler)."
	echo "Each node: prefetchfs -o max_memory=512M (the *_small systems: $SMALL); with the tier, shared_timeout=$TIMEOUT_MS, and a memcached -m 64 -t $MC_THREADS."
	[ "$KILL" = 1 ] && [ "$NMAX" -gt 1 ] && [[ " $SYSTEMS " == *" tier_small "* ]] &&
		echo "In the tier_small run of $NMAX nodes, node $NMAX's memcached was killed 1 s into epoch 2."
	echo
	cat "$WORK/table.md"
	echo
	[ -n "$SAME_LINE" ] && echo "$SAME_LINE." && echo
	echo "CPU of each run (its epochs), the machine's $(nproc) cores: busy % of the run's wall time, and CPU seconds of the nodes' prefetchfs, of their memcached servers, and of the rest (the trainers, and whatever else ran on the machine):"
	echo
	echo "| system | nodes | wall s | busy % | prefetchfs s | memcached s | rest s |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	awk -v c="$(nproc)" -v hz="$(getconf CLK_TCK)" '{
		split($5, a, ":"); split($6, b, ":")
		wall = (b[2] - a[2]) / hz / c; busy = (b[1] - a[1]) / hz
		printf "| %s | %s | %.1f | %.0f | %.1f | %.1f | %.1f |\n", $1, $2, wall, 100 * busy / (wall * c), $3, $4, busy - $3 - $4
	}' "$WORK/cpu"
	echo
	for s in tier tier_small tier_hints; do
	for n in $NODES; do
		[[ " $SYSTEMS " == *" $s "* ]] || break
		echo "$s, $n node(s): $($PY - "$WORK" "$s" "$n" <<'PY'
import json, sys, os
work, s, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tot = {}
for r in range(n):
    try:
        sc = json.load(open(os.path.join(work, "s.%s.%d.%d.json" % (s, n, r))))["transport"]["shared_cache"]
    except (OSError, ValueError, KeyError):
        continue
    for k in ("pieces_hit", "pieces_missed", "fill_waited", "fill_timed_out", "leases_won", "leases_waited", "leases_timed_out", "dropped", "errors", "ejections", "server_failures", "store_dropped", "timeouts", "slow_ejections", "aside_pieces", "staging_waits", "bypassed", "leases_released", "hits", "hit_ns", "misses", "miss_ns", "mgets", "mget_keys"):
        tot[k] = tot.get(k, 0) + sc.get(k, 0)
extra = []
if tot.get("hits"):
    extra.append("a hit's mean time in the tier %.2f ms" % (tot["hit_ns"] / tot["hits"] / 1e6))
if tot.get("misses"):
    extra.append("a miss's %.1f ms" % (tot["miss_ns"] / tot["misses"] / 1e6))
if tot.get("mgets"):
    extra.append("keys per multi-get %.2f" % (tot["mget_keys"] / tot["mgets"]))
for k in ("hit_ns", "miss_ns", "mget_keys"):
    tot.pop(k, None)
print(", ".join(["%s %d" % kv for kv in tot.items()] + extra))
PY
)"
	done
	done
} >"$MD"
cat "$MD"
say "written to $MD and $TSV"
exit $FAILED
