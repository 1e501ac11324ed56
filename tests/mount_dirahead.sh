#!/bin/bash
# Read-ahead across files and the background fill, over bench/slowfs (20 ms
# per READ, so a file that is not read ahead makes its reader wait):
#  - one reader opening the small files of a directory in name order, with
#    a pause between files: the files after the first few are opened and
#    read ahead by the engine (stats: dirahead "asked", "taken") and most of
#    their READs do not wait; every byte exact;
#  - two readers at once, each in its own directory: the same in both;
#  - next_file=off: nothing is opened ahead;
#  - a shuffled reader over a tree that fits memory: the fill runs to
#    "done" (bytes_done == bytes_total), then every file of the tree is
#    read byte-exact without one READ waiting;
#  - random preads of one 24 MiB file: the file is filled, then more random
#    preads are byte-exact and none waits.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$SLOWFS" "$MKDATA" "$HELPERS/randread" "$HELPERS/treeread.py"

DATA=$WORK/data
SLOW=$WORK/slow
N=40
mkdir -p "$DATA/tree"
for d in 0 1; do
	"$MKDATA" --seed $((d + 1)) "$DATA/d$d" $N 192K >/dev/null 2>&1 || fail "bench/mkdata d$d"
done
"$MKDATA" --seed 3 "$DATA/tree/c0" 100 64K >/dev/null 2>&1 || fail "bench/mkdata tree"
"$MKDATA" --seed 4 "$DATA/tree/c1" 100 64K >/dev/null 2>&1 || fail "bench/mkdata tree"
"$MKDATA" --seed 5 "$DATA/big" 1 24M >/dev/null 2>&1 || fail "bench/mkdata big"
slowfs_mount "$DATA" "$SLOW" -o latency_ms=20 || { fail "slowfs mount"; finish; }

# The reader (tests/helpers/treeread.py): reads files whole, each checked
# against the same path under the source, with a pause between files.
TREEREAD=$HELPERS/treeread.py

# The checks are lib.sh's stats_check over s["dirahead"] (read-ahead across
# files) and s["fill"] (the background fill).  waited N: the expression
# counting the files numbered N and up one of whose READs waited
waited() {
	printf 'len({x["file"] for x in streams() if x["waits"] > 0 and int(x["file"][-10:-4]) >= %d})' "$1"
}

fill_done() { # fill_done MNT JSON: waits (60 s at most) for the fill to be
	# done, then saves the stats in JSON
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q '"state": "done"' "$1/.prefetchfs/stats" && break
		sleep 0.1
	done
	stats_json "$1" >"$2"
}

files_of() { # files_of DIR: its files in name order, relative
	(cd "$DATA" && ls "$1"/* | sort)
}

# ---- one reader, name order -----------------------------------------------
M=$WORK/mnt-one
if pf_mount "$SLOW" "$M"; then
	# shellcheck disable=SC2046
	if guard "$M" 120 "$TREEREAD" --pause 60 "$M" "$DATA" $(files_of d0); then
		ok "one reader in name order: every byte exact"
	else
		fail "one reader in name order: the reader failed"
	fi
	stats_json "$M" >"$WORK/one.json"
	pf_umount "$M"
	stats_check "one reader: the directory was learned, files asked ahead" "$WORK/one.json" \
		's["dirahead"]["dirs_in_order"] >= 1 and s["dirahead"]["asked"] >= '$((N - 8))
	stats_check "one reader: files read ahead went to their reader" "$WORK/one.json" \
		's["dirahead"]["taken"] >= '$((N - 8))
	# the 6th file on: at most 1 in 5 waits (the machine may be loaded)
	stats_check "one reader: the files after the 5th mostly do not wait" "$WORK/one.json" \
		"$(waited 5) <= $((N / 5))"
fi

# ---- two readers, each in its own directory ------------------------------------
M=$WORK/mnt-two
if pf_mount "$SLOW" "$M"; then
	# shellcheck disable=SC2046
	guard "$M" 120 "$TREEREAD" --pause 60 "$M" "$DATA" $(files_of d0) &
	p0=$!
	# shellcheck disable=SC2046
	guard "$M" 120 "$TREEREAD" --pause 60 "$M" "$DATA" $(files_of d1)
	rc1=$?
	wait $p0
	rc0=$?
	if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]; then
		ok "two readers in two directories: every byte exact"
	else
		fail "two readers: a reader failed ($rc0, $rc1)"
	fi
	stats_json "$M" >"$WORK/two.json"
	pf_umount "$M"
	stats_check "two readers: both directories learned" "$WORK/two.json" \
		's["dirahead"]["dirs_in_order"] >= 2 and s["dirahead"]["taken"] >= '$((2 * N - 16))
	stats_check "two readers: the files after the 5th mostly do not wait" "$WORK/two.json" \
		"$(waited 5) <= $((2 * N / 5))"
fi

# ---- next_file=off ------------------------------------------------------------------
M=$WORK/mnt-off
if pf_mount "$SLOW" "$M" -o next_file=off; then
	# shellcheck disable=SC2046
	guard "$M" 120 "$TREEREAD" "$M" "$DATA" $(files_of d1 | head -12) ||
		fail "next_file=off: the reader failed"
	stats_json "$M" >"$WORK/off.json"
	pf_umount "$M"
	stats_check "next_file=off: nothing asked or opened ahead" "$WORK/off.json" \
		's["dirahead"]["asked"] == 0 and t["next_files"] == 0'
fi

# ---- a shuffled reader over a tree that fits ----------------------------------------
M=$WORK/mnt-fill
if pf_mount "$SLOW" "$M"; then
	mapfile -t TREE < <(cd "$DATA" && ls tree/c0/* tree/c1/* | sort)
	guard "$M" 120 "$TREEREAD" --pause 20 --shuffle 7 --count 40 "$M" "$DATA" "${TREE[@]}" ||
		fail "fill: the shuffled reader failed"
	fill_done "$M" "$WORK/fill1.json"
	# (but for the guess of each directory's first open: 32 files of
	# 64 KiB at most, the first open of c0 and of c1)
	stats_check "fill: the shuffled reader was not read ahead across files" "$WORK/fill1.json" \
		's["dirahead"]["asked"] <= 64'
	stats_check "fill: the tree was filled (state done, bytes_done == bytes_total)" "$WORK/fill1.json" \
		's["fill"]["state"] == "done" and s["fill"]["root"] == "tree" and s["fill"]["bytes_total"] == 200 * 65536 and s["fill"]["bytes_done"] == s["fill"]["bytes_total"]'
	if guard "$M" 120 "$TREEREAD" --shuffle 7 "$M" "$DATA" "${TREE[@]}"; then
		ok "fill: the whole tree read again, every byte exact"
	else
		fail "fill: the second pass failed"
	fi
	stats_json "$M" >"$WORK/fill2.json"
	pf_umount "$M"
	w1=$(stats_eval "$WORK/fill1.json" 't["waits"]')
	stats_check "fill: no READ waited after the fill (waits stay $w1)" "$WORK/fill2.json" \
		't["waits"] == '"${w1:-0}"' and s["tiers"]["memory"]["hits"] > 0'
fi

# ---- random preads of one big file -----------------------------------------------
M=$WORK/mnt-big
BIG=big/file-000000.bin
if pf_mount "$SLOW" "$M"; then
	guard "$M" 120 "$HELPERS/randread" -s 1 -a 4096 -m 65536 -n 100 "$M/$BIG" "$DATA/$BIG" \
		>"$WORK/big1.out" 2>&1 || { fail "big file: random preads"; cat "$WORK/big1.out"; }
	fill_done "$M" "$WORK/big1.json"
	stats_check "big file: filled whole (state done, bytes_done == bytes_total)" "$WORK/big1.json" \
		's["fill"]["state"] == "done" and s["fill"]["root"] == "'$BIG'" and s["fill"]["bytes_done"] == s["fill"]["bytes_total"] == 24 << 20'
	if guard "$M" 120 "$HELPERS/randread" -s 2 -a 4096 -m 65536 -n 300 "$M/$BIG" "$DATA/$BIG" \
		>"$WORK/big2.out" 2>&1; then
		ok "big file: random preads after the fill byte-exact"
	else
		fail "big file: random preads after the fill"
		cat "$WORK/big2.out"
	fi
	stats_json "$M" >"$WORK/big2.json"
	pf_umount "$M"
	w1=$(stats_eval "$WORK/big1.json" 't["waits"]')
	stats_check "big file: no READ waited after the fill (waits stay $w1)" "$WORK/big2.json" \
		't["waits"] == '"${w1:-0}"
fi

finish
