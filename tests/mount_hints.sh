#!/bin/bash
# The hint channel's Python side (issue 13): examples/prefetchfs_hints.py.
#  1. tests/test_hints.py, which needs no mount (a temp directory with a
#     regular .prefetchfs/plan stands for the mount): indices unchanged
#     for every sampler kind, the plan written, DataLoader workers.
#  2. examples/torch_loader.py --hints --shuffle over a prefetchfs mount,
#     two epochs, two workers: the records read are byte-exact (its digest
#     equals that of a run on the source).  A mount that has the control
#     file must take the plan without a warning; one that has not (the
#     daemon before the channel is wired in) must give exactly one warning
#     and the same records.
#  3. The same on the source directory, not a prefetchfs mount: one
#     warning, the same records.
# Needs python3-torch for /usr/bin/python3 (tests/deps.sh installs it): a
# missing one is a failure.
. "$(dirname "$0")/lib.sh"
need_fuse
PY=/usr/bin/python3
EX=$TOP/examples

if ! $PY -c 'import torch' 2>/dev/null; then
	fail "missing package python3-torch (tests/deps.sh installs it)"
	finish
fi

if (cd "$TOP" && $PY -W error::ResourceWarning -m unittest tests/test_hints.py) \
	>"$WORK/unittest.out" 2>&1; then
	ok "tests/test_hints.py: $(grep -E '^Ran ' "$WORK/unittest.out")"
else
	fail "tests/test_hints.py"
	tail -40 "$WORK/unittest.out"
fi

SRC=$WORK/src
M=$WORK/mnt
mkdir -p "$SRC/shards"
for i in 0 1 2; do
	mkfile "$SRC/shards/shard-$i.bin" $((2 * 1048576)) # 32 records each
done
pf_mount "$SRC" "$M" || { fail "prefetchfs mount"; finish; }
ok "mounted prefetchfs"

# loader NAME PATH [--hints ...]: torch_loader.py over PATH, 2 epochs of
# the 96 records of 64 KiB, shuffled; its output in $WORK/NAME.out
loader() {
	local name=$1 path=$2
	shift 2
	guard "$M" 120 $PY "$EX/torch_loader.py" --record 64K --batch 8 \
		--workers 2 --compute-ms 2 --epochs 2 --shuffle --seed 9 \
		--checksum "$@" "$path" >"$WORK/$name.out" 2>&1
}
digest() { grep -o 'digest=[0-9a-f]*' "$WORK/$1.out"; }
warnings_of() { grep -c 'not a prefetchfs mount with hints' "$WORK/$1.out"; }

loader src "$SRC/shards" || fail "torch_loader.py on the source"
WANT=$(digest src)
check "the source's digest ($WANT) covers 2 x 96 records" \
	grep -q 'samples=192 .*digest=' "$WORK/src.out"

if loader mnt "$M/shards" --hints; then
	check "--hints on the mount: records byte-exact" \
		test -n "$WANT" -a "$(digest mnt)" = "$WANT"
	if [ -e "$M/.prefetchfs/plan" ]; then
		check "--hints on a mount with the control file: no warning" \
			test "$(warnings_of mnt)" -eq 0
	else
		check "--hints on a mount without the control file: one warning" \
			test "$(warnings_of mnt)" -eq 1
	fi
	check "--hints on the mount: no traceback" \
		test "$(grep -c Traceback "$WORK/mnt.out")" -eq 0
else
	fail "torch_loader.py --hints on the mount"
	tail -20 "$WORK/mnt.out"
fi

if loader srchints "$SRC/shards" --hints --mountpoint "$SRC"; then
	check "--hints on a plain directory: records byte-exact" \
		test "$(digest srchints)" = "$WANT"
	check "--hints on a plain directory: one warning" \
		test "$(warnings_of srchints)" -eq 1
else
	fail "torch_loader.py --hints on the source"
	tail -20 "$WORK/srchints.out"
fi

# prefetchfs-stat shows the plans of a stats file that has some (a
# directory holding one stands for the mount)
FAKE=$WORK/fake
mkdir -p "$FAKE/.prefetchfs"
cat >"$FAKE/.prefetchfs/stats" <<'EOF'
{"backend": "posix", "totals": {"reads": 1}, "streams": [], "plans": [
 {"state": "abandoned", "why": "reads stopped matching: 10 of the last 64 READs of its files were in the plan",
  "id": 3, "gen": 1, "entries": 1281167, "next_entry": 5120, "ahead_entries": 0, "ahead_bytes": 0,
  "read_planned": 5200, "read_unplanned": 54, "wasted_bytes": 73400320, "latency_ns": 52300000},
 {"state": "following", "why": "", "id": 4, "gen": 2, "entries": 640, "next_entry": 12,
  "ahead_entries": 80, "ahead_bytes": 9175040, "read_planned": 12, "read_unplanned": 0,
  "wasted_bytes": 0, "latency_ns": 0}]}
EOF
COLUMNS=200 "$TOP/prefetchfs-stat" -n 1 "$FAKE" >"$WORK/stat.out" 2>&1
check "prefetchfs-stat: a line per plan" \
	grep -qE '^3 +abandoned +1281167 +5120 +0 +0 +5200 +54 +70.0M +52.3  reads stopped matching: 10 of' "$WORK/stat.out"
check "prefetchfs-stat: a following plan" \
	grep -qE '^4 +following +640 +12 +80 +8.8M +12 +0 +0 +-  $' "$WORK/stat.out"

finish
