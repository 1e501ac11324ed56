#!/bin/bash
# The background fill of three nodes sharing a tier (issue 30): three
# mounts, each with its own memcached on 127.0.0.2-4 (shared_self), of one
# origin (nginx behind bench/delayproxy, 20 ms and 64 MiB/s a connection);
# a tree of 300 files of 64 KiB in two directories; on each node a
# shuffled reader of its rank's share (disjoint shares, one permutation),
# all at once.  Each
# node's fill reads from the origin the files the tier's placement puts on
# its own server first and leaves the others to their nodes (fill
# peer_files, about two thirds of the tree each), then takes them from the
# tier.  Checked: every byte; the fills done on every node; the origin
# sent the tree once (1.1 x at most, where three nodes alone send 3 x);
# each node left files to its peers.  About 10 s.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

N=300
FSIZE=$((64 << 10))
SRC=$WORK/src
# (two directories of 150: a shuffled reader of a small directory follows
# name order by chance often enough for the learner to stop the fill)
python3 "$TOP/bench/mktree.py" --classes 2 "$SRC/tree" $N 64K >/dev/null || { fail "mktree"; finish; }
tier_nodes_start "$SRC" 3 20

for i in 0 1 2; do
	pf_mount_ready "$DELAY_URL/" "$WORK/n$i" -o "max_memory=64M,shared_cache=$LIST,shared_secret=$SECRET,shared_self=${MCS[$i]},shared_timeout=500" >/dev/null ||
		{ fail "mount $i"; finish; }
done

# share MNT RANK: reads rank RANK's third of a shuffled order of the tree,
# each file compared with the source
share() {
	python3 - "$1/tree" "$SRC/tree" "$2" <<'PY'
import os, random, sys
root, src, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = sorted(os.path.relpath(os.path.join(dp, f), src)
               for dp, _, fs in os.walk(src) for f in fs)
random.Random(7).shuffle(names)
bad = 0
for n in names[rank::3]:
    with open(os.path.join(root, n), "rb") as f, \
         open(os.path.join(src, n), "rb") as g:
        bad += f.read() != g.read()
sys.exit(1 if bad else 0)
PY
}

pids=()
for i in 0 1 2; do
	share "$WORK/n$i" $i &
	pids+=($!)
done
for i in 0 1 2; do
	if wait "${pids[$i]}"; then
		ok "node $i: its share byte-exact"
	else
		fail "node $i: its share byte-exact"
		sed 's/^/  log: /' "$WORK/daemon.n$i.log"
	fi
done
for i in 0 1 2; do
	done_=false
	for ((k = 0; k < 300; k++)); do
		[ "$(stats_eval "$WORK/n$i" "s['fill']['state']")" = done ] && { done_=true; break; }
		sleep 0.1
	done
	check "node $i: its fill of the tree is done" $done_
	$done_ || grep -i "fill\|shuffled\|order" "$WORK/daemon.n$i.log" | sed 's/^/  log: /'
	stats_eval "$WORK/n$i" "'  node $i: fill %s, %d files left to peers; tier: pieces from the store %d, from the tier %d, fill waited %d' % (s['fill']['state'], s['fill']['peer_files'], sc['pieces_missed'], sc['pieces_hit'], sc['fill_waited'])"
	# about two thirds each; a third at least, by placement's chance
	stats_check "node $i: left files to its peers" "$WORK/n$i" \
		"s['fill']['peer_files'] >= $((N / 3)) and s['fill']['files'] == $N"
done
sent=$(awk '$7 ~ /^\/tree\// && $6 == "\"GET" { s += $10 } END { print s + 0 }' "$NGINX_DIR/access.log")
echo "  origin: $sent bytes of the tree's $((N * FSIZE))"
check "the origin sent the tree once (1.1 x at most)" [ "$sent" -le $((N * FSIZE * 11 / 10)) ]
# every node now reads the whole tree, exact (from memory or the tier)
for i in 0 1 2; do
	check "node $i: the whole tree byte-exact" diff -r -q "$SRC/tree" "$WORK/n$i/tree"
done
finish
