#!/bin/bash
# The daemon learns each reader's pattern.  The source is bench/slowfs
# (2 ms per READ) so that read-ahead matters; each scenario gets a fresh
# prefetchfs mount and its stats are read right after the load ends (files
# read in the last minute keep their streams in the stats):
#  - a trainer reading 8 MiB batches with 20 ms of compute in between:
#    "sequential", batch ~8 MiB, more hits than misses, read-ahead done;
#  - rank 1 of 4 with 1 MiB records: "strided", stride 4 MiB, and nothing
#    fetched that is not delivered;
#  - random preads: "random", and next to no read-ahead;
#  - shards read one after another: the next shard is read ahead before
#    its reader opens it (none of its READs misses), not with next_file=off.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$SLOWFS" "$TRAINER" "$MKDATA" "$HELPERS/randread"

DATA=$WORK/data
SLOW=$WORK/slow
FILE=file-000000.bin
"$MKDATA" "$DATA" 1 128M >/dev/null 2>&1 || fail "bench/mkdata"
"$MKDATA" "$DATA/shards" 3 16M >/dev/null 2>&1 || fail "bench/mkdata shards"
slowfs_mount "$DATA" "$SLOW" -o latency_ms=2 || { fail "slowfs mount"; finish; }

# jcheck WHAT STATS PYTHON-EXPR: EXPR is true of the stats file STATS, where
#   s   the stats, t its totals,
#   st  the stream of $FILE with the most READs (None if there is none),
#   app the bytes the load read ($APP)
jcheck() {
	local what=$1 stats=$2 expr=$3 out
	if out=$(python3 - "$stats" "$expr" "${APP:-0}" "$FILE" 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t = s["totals"]
app = int(sys.argv[3])
mine = [x for x in s["streams"] if x["file"] == sys.argv[4]]
st = max(mine, key=lambda x: x["reads"]) if mine else None
res = eval(sys.argv[2])
if not res:
    print("  expression:", sys.argv[2])
    print("  app bytes:", app)
    print("  totals:", json.dumps(t))
    print("  stream:", json.dumps(st))
    print("  streams of the file:", len(mine), [x["pattern"] for x in mine])
sys.exit(0 if res else 1)
PY
	); then
		ok "$what"
	else
		fail "$what"
		echo "$out"
	fi
}

# show STATS: one informational line
show() {
	python3 - "$1" "$FILE" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t = s["totals"]
mine = [x for x in s["streams"] if x["file"] == sys.argv[2]]
st = max(mine, key=lambda x: x["reads"]) if mine else {}
print("  (stream: pattern=%s batch=%s stride=%s record=%s reads=%s hits=%s misses=%s;"
      " totals: served=%s fetched=%s prefetched=%s pushed=%s)" % (
      st.get("pattern"), st.get("batch"), st.get("stride"), st.get("record"),
      st.get("reads"), st.get("hits"), st.get("misses"), t["bytes_served"],
      t["bytes_fetched"], t["bytes_prefetched"], t.get("bytes_pushed", 0)))
PY
}

# run_load NAME COMMAND...: on a fresh mount $M run COMMAND (where @MNT@
# stands for $M), then save the stats to $WORK/NAME.json
run_load() {
	local name=$1 rc a args=()
	shift
	M=$WORK/mnt-$name
	for a in "$@"; do args+=("${a//@MNT@/$M}"); done
	pf_mount "$SLOW" "$M" ${PF_OPTS:+-o "$PF_OPTS"} || { fail "$name: mount"; return 1; }
	guard "$M" 60 "${args[@]}" >"$WORK/$name.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name: the load failed (exit $rc)"
		cat "$WORK/$name.out"
	else
		ok "$name: the load ran, data byte-exact"
	fi
	if ! cat "$M/.prefetchfs/stats" >"$WORK/$name.json" ||
	   ! python3 -m json.tool "$WORK/$name.json" >/dev/null; then
		fail "$name: stats readable JSON"
		pf_umount "$M"
		return 1
	fi
	pf_umount "$M"
	show "$WORK/$name.json"
	return 0
}
MiB=1048576

# ---- sequential batches -------------------------------------------------------
APP=$((128 * MiB))
if run_load seq "$TRAINER" --batch 8M --compute-ms 20 --check "$DATA/$FILE" "@MNT@/$FILE"; then
	S=$WORK/seq.json
	jcheck "sequential: the file has a stream" "$S" 'st is not None'
	jcheck "sequential: pattern \"sequential\"" "$S" 'st["pattern"] == "sequential"'
	jcheck "sequential: batch learned in 4-16 MiB" "$S" '4*2**20 <= st["batch"] <= 16*2**20'
	jcheck "sequential: hits > misses" "$S" 'st["hits"] > st["misses"]'
	jcheck "sequential: bytes_prefetched > 0" "$S" 't["bytes_prefetched"] > 0'
	jcheck "sequential: no fetch errors" "$S" 't["fetch_errors"] == 0'
fi

# ---- strided: rank 1 of 4, 1 MiB records ------------------------------------------
APP=$((32 * MiB))
if run_load strided "$TRAINER" --batch 4M --compute-ms 20 --stride 4M --record 1M --offset 1M \
	--check "$DATA/$FILE" "@MNT@/$FILE"; then
	S=$WORK/strided.json
	jcheck "strided: the file has a stream" "$S" 'st is not None'
	jcheck "strided: pattern \"strided\"" "$S" 'st["pattern"] == "strided"'
	jcheck "strided: stride 4 MiB" "$S" 'st["stride"] == 4*2**20'
	jcheck "strided: record 1 MiB" "$S" 'st["record"] == 2**20'
	jcheck "strided: bytes_fetched <= 1.1 x bytes delivered (served + pushed)" "$S" \
		't["bytes_fetched"] <= 1.1 * (t["bytes_served"] + t.get("bytes_pushed", 0))'
	jcheck "strided: bytes_fetched <= 1.1 x bytes the reader read" "$S" \
		't["bytes_fetched"] <= 1.1 * app'
fi

# ---- random preads ----------------------------------------------------------------
# 500 preads of 4-64 KiB at page-aligned random offsets (so the kernel
# asks for exactly what is read); fill=off: a random reader of a file that
# fits memory would otherwise have the rest filled in the background (that
# is tests/mount_dirahead.sh's)
APP=0
if PF_OPTS=fill=off run_load random "$HELPERS/randread" -s 1 -a 4096 -m 65536 -n 500 "@MNT@/$FILE" "$DATA/$FILE"; then
	S=$WORK/random.json
	APP=$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' "$WORK/random.out")
	echo "  (the reader read ${APP:-?} bytes)"
	jcheck "random: the file has a stream" "$S" 'st is not None'
	jcheck "random: pattern \"random\" (the stream with the most READs)" "$S" 'st["pattern"] == "random"'
	jcheck "random: bytes_fetched <= 1.2 x bytes read" "$S" 'app > 0 and t["bytes_fetched"] <= 1.2 * app'
	jcheck "random: bytes_prefetched small (<= 10% of bytes read)" "$S" 't["bytes_prefetched"] <= 0.1 * app'
fi

# ---- shards in name order -----------------------------------------------------------
# shard_check WHAT STATS EXPR: EXPR is true of the stats, where t are the
# totals and sh maps each shard's name to its streams' summed misses
shard_check() {
	if python3 - "$2" "$3" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t = s["totals"]
sh = {}
for x in s["streams"]:
    sh[x["file"].split("/")[-1]] = sh.get(x["file"].split("/")[-1], 0) + x["misses"]
ok = eval(sys.argv[2])
if not ok:
    print("  expression:", sys.argv[2], "next_files:", t.get("next_files"), "misses:", sh)
sys.exit(0 if ok else 1)
PY
	then ok "$1"; else fail "$1"; fi
}
SHARDS=("@MNT@/shards/file-000000.bin" "@MNT@/shards/file-000001.bin" "@MNT@/shards/file-000002.bin")
APP=0
if run_load shards "$TRAINER" --batch 4M --compute-ms 20 --check "$DATA/shards" "${SHARDS[@]}"; then
	S=$WORK/shards.json
	shard_check "shards: the 2nd and 3rd shards were opened ahead" "$S" 't["next_files"] == 2'
	shard_check "shards: no READ of the 2nd and 3rd shards missed" "$S" \
		'sh.get("file-000001.bin") == 0 and sh.get("file-000002.bin") == 0'
fi
PF_OPTS=next_file=off run_load shards-off "$TRAINER" --batch 4M --compute-ms 20 --check "$DATA/shards" "${SHARDS[@]}" \
	&& shard_check "shards, next_file=off: nothing opened ahead" "$WORK/shards-off.json" \
		't["next_files"] == 0 and sh.get("file-000001.bin", 0) > 0'

finish
