#!/bin/bash
# prefetchfs-stat tells which tier served an epoch and what to change
# (issue 31), 80 columns, output not a terminal:
#   1. a first epoch of shuffled small files over a disk cache: the store
#      gave the bytes; the files are one line together, not one each; the
#      total row's wait% is filled; what prefetching saved is said and
#      follows from the stats (READs at once x a miss's mean wait)
#   2. after a remount the epoch is served by the disk cache: a disk row
#      at 100% with every byte, the store's row at 0
#   3. the next epoch is served by the page cache (no READ reaches the
#      daemon): its row says so, with the files' sizes
#   4. the fill of a tree too big for max_memory: an advice line naming
#      max_memory and a value that would hold it, or cache_dir
#   5. a server that ignores Range: its warning wrapped, whole, and an
#      advice line
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools "$TOP/prefetchfs-stat"

STAT=$TOP/prefetchfs-stat
export COLUMNS=80
SRC=$WORK/src
M=$WORK/mnt
mkdir -p "$SRC/train"
python3 - "$SRC/train" <<'PY'
import os, random, sys
random.seed(31)
for i in range(48):
    with open(os.path.join(sys.argv[1], "s%03d.jpg" % i), "wb") as f:
        f.write(random.randbytes(40000 + 997 * i))
PY
NFILES=48
TOTAL=$(find "$SRC" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')

# epoch MNT: every file of train/ read once, in a shuffled order
epoch() {
	local f
	for f in $(cd "$SRC/train" && ls | shuf --random-source=<(yes)); do
		cat "$1/train/$f" >/dev/null || return 1
	done
}

# screen MNT OUT: one screen of prefetchfs-stat into OUT
screen() {
	timeout 10 "$STAT" -n 1 "$1" >"$2" 2>&1
}

# fits OUT: every line of OUT within 80 columns
fits() {
	! awk 'length($0) > 80 { exit 1 }' "$1" && return 1
	return 0
}

# joined OUT TAG: the TAG: lines of OUT and their continuations, one line
joined() {
	awk -v tag="$2:" '$1 == tag { on = 1; printf "%s", $0; next }
		on && /^        / { sub(/^ +/, " "); printf "%s", $0; next }
		{ on = 0 } END { print "" }' "$1"
}

# size_of BYTES: as prefetchfs-stat writes a size (12.3M)
size_of() {
	python3 -c '
import sys
v, u = float(sys.argv[1]), 0
while v >= 1024 and u < 5:
    v, u = v / 1024, u + 1
print("%.0f" % v if u == 0 else "%.1f%s" % (v, "BKMGTP"[u]))' "$1"
}

# ---- 1. a first epoch, over a disk cache ------------------------------------
OPTS=cache_dir=$WORK/cache,max_memory=64M
pf_mount "$SRC" "$M" -o "$OPTS" || { fail "mount"; finish; }
check "1. epoch 1 read" epoch "$M"
check "1. the disk cache holds the tree" wait_cached "$M" "$TOTAL"
screen "$M" "$WORK/1.txt"
cat "$WORK/1.txt"
check "1. every line within 80 columns" fits "$WORK/1.txt"
check "1. a disk cache row, the store's bytes the tree's" \
	bash -c 'grep -qE "^disk cache +[0-9.]+ " "$1" && grep -qE "^store +- +$2 " "$1"' \
	_ "$WORK/1.txt" "$(size_of "$TOTAL")"
check "1. the $NFILES files of train/ on one line, none on its own" \
	bash -c 'grep -qE "^train/\* +$2 " "$1" && ! grep -q "^train/s" "$1"' _ "$WORK/1.txt" "$NFILES"
check "1. the total row's wait% is a number" \
	bash -c 'awk '\''$1 == "total" { print $6 }'\'' "$1" | grep -qE "^[0-9]+\.[0-9]$"' _ "$WORK/1.txt"
stats_json "$M" >"$WORK/1.json"
hits=$(stats_eval "$WORK/1.json" 't["hits"]')
if [ "$hits" -gt 0 ]; then
	check "1. saved: $(grep '^saved' "$WORK/1.txt")" python3 - "$WORK/1.txt" "$WORK/1.json" <<'PY'
import json, re, sys
line = [l for l in open(sys.argv[1]) if l.startswith("saved ~")][0]
t = json.load(open(sys.argv[2]))["totals"]
m = re.match(r"saved ~([0-9.]+) (ms|s|min|h): (\d+) READs answered at once x ([0-9.]+) ms, a miss's mean wait", line)
assert m, line
lat = t["miss_wait_ms"] / t["misses"]
assert int(m.group(3)) == t["hits"], (m.group(3), t["hits"])
assert abs(float(m.group(4)) - lat) < 0.006, (m.group(4), lat)
secs = float(m.group(1)) * {"ms": 1e-3, "s": 1, "min": 60, "h": 3600}[m.group(2)]
want = t["hits"] * lat / 1000
assert abs(secs - want) <= 0.051 * max(want, 0.01) + 0.0006, (secs, want)
PY
else
	echo "(epoch 1 had no READ answered at once: no saved line to check)"
fi
pf_umount "$M" || fail "1. unmount"

# ---- 2. the remount: the disk cache serves ------------------------------------
pf_mount "$SRC" "$M" -o "$OPTS" || { fail "remount"; finish; }
check "2. epoch 2 read" epoch "$M"
screen "$M" "$WORK/2.txt"
cat "$WORK/2.txt"
check "2. every line within 80 columns" fits "$WORK/2.txt"
check "2. the disk cache served the epoch: 100% of its lookups, every byte" \
	bash -c 'grep -qE "^disk cache +100\.0 +$2 " "$1"' _ "$WORK/2.txt" "$(size_of "$TOTAL")"
check "2. the store gave nothing" grep -qE "^store +- +0 " "$WORK/2.txt"

# ---- 3. the page cache serves -------------------------------------------------
check "3. epoch 3 read" epoch "$M"
screen "$M" "$WORK/3.txt"
cat "$WORK/3.txt"
check "3. the page cache row: $NFILES opens made no READ, the tree's size" \
	bash -c 'grep -qE "^page cache +- +~$2 .* $3 opens made no READ \(estimate\)" "$1"' \
	_ "$WORK/3.txt" "$(size_of "$TOTAL")" "$NFILES"
pf_umount "$M" || fail "3. unmount"

# ---- 4. a fill too big for max_memory -------------------------------------------
mkdir -p "$WORK/big/train"
for i in $(seq 1 100); do head -c 600000 /dev/zero >"$WORK/big/train/s$i.bin"; done
BIG=60000000
pf_mount "$WORK/big" "$M" -o max_memory=32M || { fail "mount of big"; finish; }
for f in $(cd "$WORK/big/train" && ls | shuf --random-source=<(yes) | head -40); do
	cat "$M/train/$f" >/dev/null
done
for i in $(seq 50); do
	[ "$(stats_eval "$M" 's["fill"]["state"]')" = too_big ] && break
	sleep 0.1
done
screen "$M" "$WORK/4.txt"
cat "$WORK/4.txt"
check "4. every line within 80 columns" fits "$WORK/4.txt"
joined "$WORK/4.txt" advice >"$WORK/4.advice"
check "4. advice: $(cat "$WORK/4.advice")" python3 - "$WORK/4.advice" "$BIG" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"the fill of train/ \(57\.2M\) does not fit in 3/4 of max_memory: "
              r"raise max_memory to about ([0-9.]+)([MG]) or add cache_dir=DIR", text)
assert m, text
v = float(m.group(1)) * (1 << (20 if m.group(2) == "M" else 30))
need = int(sys.argv[2]) * 4 / 3
assert need <= v <= need * 1.1, (v, need)
PY
pf_umount "$M" || fail "4. unmount"

# ---- 5. a server that ignores Range ----------------------------------------------
faultd_start "$SRC" --fault 'mode=ignore_range&count=inf' >/dev/null || { fail "faultd"; finish; }
pf_mount "$FAULTD_URL/" "$M" -o max_memory=64M || { fail "mount over http"; finish; }
cat "$M/train/s001.jpg" >/dev/null
screen "$M" "$WORK/5.txt"
cat "$WORK/5.txt"
check "5. every line within 80 columns" fits "$WORK/5.txt"
check "5. the warning whole: $(joined "$WORK/5.txt" warning)" \
	bash -c 'joined() { awk -v tag="$2:" '\''$1 == tag { on = 1; printf "%s", $0; next }
		on && /^         / { sub(/^ +/, " "); printf "%s", $0; next } { on = 0 } END { print "" }'\'' "$1"; }
		joined "$1" warning | grep -qF "warning: the server ignores Range requests (200 with the whole object): every read downloads from the start of its object"' \
	_ "$WORK/5.txt"
check "5. advice for it: $(joined "$WORK/5.txt" advice)" \
	bash -c 'grep -q "^advice: serve the files from a server that answers Range" "$1"' _ "$WORK/5.txt"
finish
