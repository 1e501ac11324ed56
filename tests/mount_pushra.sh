#!/bin/bash
# Push by read-ahead (-o push_by, src/front/fuse_push.c pf_fuse_push()):
#   1. default, as root: a sequential reader's read-ahead reaches its page
#      cache through the kernel's read-ahead of a clone of the mount; the
#      stats count those READs (self_reads), none found its bytes missing,
#      the reader's own READs are few, the bytes exact
#   2. push_by=store: no such READ, pushed all the same, bytes exact
#   3. an unmount right after the reader closed, with pushes in flight, 10
#      rounds: fusermount3 -u never fails busy, the daemon exits each time
#      (no clone of the mount left behind)
#   4. a daemon of a user who may not clone a mount (nobody): one log line,
#      pushed with notify_store, bytes exact
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools

SRC=$WORK/src
mkdir -p "$SRC"
mkfile "$SRC/a.bin" $((64 << 20))
M=$WORK/mnt
total() { stats_eval "$1" "t[\"$2\"]"; }
train() { # MNT: a sequential reader of a.bin, checked against the source
	"$TOP/bench/trainer" --batch 8M --compute-ms 10 --check "$SRC/a.bin" "$1/a.bin" >"$WORK/train.out" &&
		grep -q "check=ok" "$WORK/train.out"
}

# ---- 1. default ---------------------------------------------------------------
pf_mount "$SRC" "$M" || { fail "mount"; finish; }
check "1. bytes exact" train "$M"
sr=$(total "$M" self_reads)
sm=$(total "$M" self_misses)
pushed=$(total "$M" bytes_pushed)
reads=$(total "$M" reads)
echo "  self_reads $sr, self_misses $sm, bytes_pushed $pushed, reads $reads"
check "1. pushed by the kernel's read-ahead ($sr READs of the pusher)" [ "$sr" -gt 0 ]
check "1. each found its bytes in memory ($sm missed)" [ "$sm" -eq 0 ]
check "1. the reader's own READs are few ($reads for 64 MiB)" [ "$reads" -lt 64 ]
check "1. the log does not say it fell back" eval '! grep -q "push by read-ahead not available" "$WORK/daemon.mnt.log"'
pf_umount "$M" || fail "unmount"

# ---- 2. push_by=store ------------------------------------------------------------
pf_mount "$SRC" "$M" -o push_by=store || { fail "mount push_by=store"; finish; }
check "2. bytes exact" train "$M"
check "2. no READ of the pusher ($(total "$M" self_reads))" [ "$(total "$M" self_reads)" -eq 0 ]
check "2. pushed all the same ($(total "$M" bytes_pushed) bytes)" [ "$(total "$M" bytes_pushed)" -gt 0 ]
pf_umount "$M" || fail "unmount"

# ---- 3. unmount with pushes in flight -----------------------------------------------
bad=0
for i in $(seq 10); do
	pf_mount "$SRC" "$M" || { fail "mount $i"; break; }
	pid=$(pf_pid "$M")
	dd if="$M/a.bin" of=/dev/null bs=1M count=12 2>/dev/null
	if ! err=$(fusermount3 -u "$M" 2>&1); then
		echo "  round $i: $err"
		bad=$((bad + 1))
		unmount_busy_retry "$M"
	fi
	wait_gone "$pid" 100 || { echo "  round $i: the daemon did not exit"; bad=$((bad + 1)); }
done
check "3. 10 unmounts with pushes in flight: none busy, every daemon gone" [ "$bad" -eq 0 ]

# ---- 4. a user who may not clone a mount -----------------------------------------------
NR=$(mktemp -d /tmp/pfnr.XXXXXX)
CLEANUP_HOOKS+=("rm -rf '$NR'")
mkdir -p "$NR/src" "$NR/mnt" "$NR/logd"
cp "$SRC/a.bin" "$NR/src/a.bin"
chmod 755 "$NR" "$NR/src"
chmod 644 "$NR/src/a.bin"
chown 65534:65534 "$NR/mnt" "$NR/logd"
track_mount "$NR/mnt"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# a user's mount needs /dev/fuse open to all, as Debian's udev rule makes
# it (0666); where this machine has it 0600, for this part only
FUSE_MODE=$(stat -c %a /dev/fuse)
if [ "$FUSE_MODE" != 666 ]; then
	CLEANUP_HOOKS+=("chmod $FUSE_MODE /dev/fuse")
	chmod 666 /dev/fuse
fi
if as_nobody "$PF" -o log_file="$NR/logd/log" "$NR/src" "$NR/mnt" >"$WORK/nr.out" 2>&1; then
	as_nobody "$TOP/bench/trainer" --batch 8M --compute-ms 10 --check "$NR/src/a.bin" \
		"$NR/mnt/a.bin" >"$WORK/nr.train" 2>&1
	check "4. nobody: bytes exact" grep -q "check=ok" "$WORK/nr.train"
	check "4. nobody: pushed all the same" \
		[ "$(as_nobody cat "$NR/mnt/.prefetchfs/stats" | json_eval 's["totals"]["bytes_pushed"]')" -gt 0 ]
	check "4. nobody: one log line says the push falls back" \
		[ "$(grep -c "push by read-ahead not available" "$NR/logd/log")" -eq 1 ]
	as_nobody fusermount3 -u "$NR/mnt" || fail "4. nobody: unmount"
	chmod "$FUSE_MODE" /dev/fuse
else
	fail "4. mount as nobody: $(cat "$WORK/nr.out")"
	chmod "$FUSE_MODE" /dev/fuse
fi

finish
