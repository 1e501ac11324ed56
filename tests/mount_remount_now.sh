#!/bin/bash
# tests/run: parallel
# A mount right after an unmount, on the same cache_dir (issue 28): the
# daemon unmounted still holds the disk cache while it finishes (here:
# fetches in flight from a source that takes 1.5 s a read, bench/slowfs),
# and the new mount must not be refused as "in use":
#   1. fusermount3 -u returns, the next mount starts at once: it succeeds
#      (waiting for the old daemon with one line) and reads byte-exact
#   2. a second daemon on a cache_dir in use by a mount: still refused,
#      with one line
# With PF_BIN=<a build before issue 28> section 1 fails.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$SLOWFS"

SRC=$WORK/src
SLOW=$WORK/slow
M=$WORK/mnt
C=$WORK/cache
mkdir -p "$SRC" "$M"
mkfile "$SRC/big.bin" $((64 << 20))
mkfile "$SRC/small.bin" 5000
slowfs_mount "$SRC" "$SLOW" -o latency_ms=1500 || { fail "slowfs"; finish; }
OPTS=cache_dir=$C,cache_size=128M

# ---- 1. unmount, mount again at once -------------------------------------------

pf_mount "$SLOW" "$M" -o "$OPTS" || { fail "mount"; finish; }
old=$(pf_pid "$M")
# fetches in flight when the mount goes: the reader starts them
cat "$M/big.bin" >/dev/null 2>&1 &
reader=$!
sleep 0.5
kill -9 "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
pf_wait_unmount() {
	local i
	for ((i = 0; i < 50; i++)); do
		fusermount3 -u "$M" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
check "1. unmounted" pf_wait_unmount
"$PF" -o "$OPTS" "$SLOW" "$M" >"$WORK/out1" 2>&1
rc=$?
gone=no
exited "$old" && gone=yes
echo "remount: exit $rc (the old daemon had exited when it returned: $gone)"
cat "$WORK/out1"
check "1. the mount right after the unmount succeeds" [ $rc -eq 0 ]
if mountpoint -q "$M"; then
	track_pid "$(pf_pid "$M")"
	check "1. byte-exact" cmp -s "$SRC/small.bin" "$M/small.bin"
fi
check "1. it says it waited, one line" grep -q "is exiting: waiting for it" "$WORK/out1"

# ---- 2. a cache_dir in use ------------------------------------------------------

mountpoint -q "$M" || pf_mount "$SLOW" "$M" -o "$OPTS" || { fail "mount"; finish; }
mkdir -p "$WORK/mnt2"
t0=$(date +%s%N)
"$PF" -o "$OPTS" "$SLOW" "$WORK/mnt2" >"$WORK/out2" 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "2. a second daemon: refused ($ms ms)" [ $rc -ne 0 ]
check "2. one line, in use" eval "one_line_err '$WORK/out2' && grep -q 'in use by another prefetchfs' '$WORK/out2'"
check "2. not mounted" eval "! mountpoint -q '$WORK/mnt2'"
pf_umount "$M" || fail "unmount"

finish
