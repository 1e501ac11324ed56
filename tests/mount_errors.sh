#!/bin/bash
# Start-up errors: a bad SOURCE, MOUNTPOINT or option gives exactly one
# line "prefetchfs: ..." on stderr naming the problem, a non-zero exit, and
# no mount.  --help and --version exit 0.  A file rewritten in the source
# while it is being read: the reader gets EIO, or only bytes of the original
# content, never new bytes; the mount stays usable.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$HELPERS/slowread" "$MKDATA"

SRC=$WORK/src
MNT=$WORK/mnt
mkdir -p "$SRC" "$MNT"
printf 'hello\n' >"$SRC/a.txt"
printf 'not a directory\n' >"$WORK/plainfile"

# bad_start WHAT WORD ARGS...: prefetchfs ARGS fails with one stderr line
# starting "prefetchfs:" that contains WORD, and leaves no mount on $MNT
bad_start() {
	local what=$1 word=$2 rc
	shift 2
	timeout 20 "$PF" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
		fail "$what: exit status $rc (expected a failure)"
	else
		ok "$what: exit status $rc"
	fi
	if one_line_err "$WORK/err"; then
		ok "$what: one line on stderr: $(cat "$WORK/err")"
	else
		fail "$what: expected one line 'prefetchfs: ...' on stderr, got:"
		cat "$WORK/err"
	fi
	if grep -qF -- "$word" "$WORK/err"; then
		ok "$what: the message names '$word'"
	else
		fail "$what: the message does not name '$word'"
	fi
	check "$what: nothing on stdout" test ! -s "$WORK/out"
	if mountpoint -q "$MNT"; then
		fail "$what: a mount was left on $MNT"
		fusermount3 -u "$MNT"
	else
		ok "$what: no mount left"
	fi
}

bad_start "missing source" "$WORK/no-such-source" "$WORK/no-such-source" "$MNT"
bad_start "source is a file" "$WORK/plainfile" "$WORK/plainfile" "$MNT"
bad_start "missing mountpoint" "$WORK/no-such-mnt" "$SRC" "$WORK/no-such-mnt"
bad_start "mountpoint is a file" "$WORK/plainfile" "$SRC" "$WORK/plainfile"
bad_start "-o max_memory=lots" "max_memory" -o max_memory=lots "$SRC" "$MNT"
bad_start "-o prefetch_batches=1" "prefetch_batches" -o prefetch_batches=1 "$SRC" "$MNT"
bad_start "-o nonsense" "nonsense" -o nonsense "$SRC" "$MNT"
check "-o nonsense: the message says the option is unknown" grep -qi unknown "$WORK/err"
bad_start "-o nonsense=1" "nonsense" -o nonsense=1 "$SRC" "$MNT"
check "-o nonsense=1: the message says the option is unknown" grep -qi unknown "$WORK/err"
bad_start "-o io=magic" "io" -o io=magic "$SRC" "$MNT"
bad_start "-o block_size=3000" "block_size" -o block_size=3000 "$SRC" "$MNT"
bad_start "unknown flag --frobnicate" "--frobnicate" --frobnicate "$SRC" "$MNT"
bad_start "no mountpoint" "MOUNTPOINT" "$SRC"
bad_start "no arguments" "SOURCE" 
bad_start "three arguments" "$WORK/third" "$SRC" "$MNT" "$WORK/third"
check "no prefetchfs daemon left by the failed starts" \
	test -z "$(pgrep -f "$(pf_daemons_re)")"

timeout 20 "$PF" --help >"$WORK/help" 2>&1
check "--help exits 0" test $? -eq 0
check "--help lists max_memory" grep -q max_memory "$WORK/help"
check "--help lists prefetch_batches, cache_timeout, io" \
	bash -c 'grep -q prefetch_batches "$1" && grep -q cache_timeout "$1" && grep -q "io=" "$1"' _ "$WORK/help"
timeout 20 "$PF" --version >"$WORK/version" 2>&1
check "--version exits 0" test $? -eq 0
check "--version prints a version" grep -qE '[0-9]+\.[0-9]+' "$WORK/version"

# a good start after all that still works on the same mountpoint
pf_mount "$SRC" "$MNT" || fail "mount after the failed starts"
check "the mount works" grep -qx hello "$MNT/a.txt"
pf_umount "$MNT"
check "unmounted" bash -c '! mountpoint -q "$1"' _ "$MNT"

# ---- a file that changes while it is read ------------------------------------------
# slowread reads the file in 1 MiB pieces and compares every byte it gets
# with ORIG, a copy of the content when reading started.  It pauses after
# PAUSE bytes; meanwhile the source file is rewritten IN PLACE (same inode,
# O_TRUNC) with other bytes and another size; then it reads on until EOF or
# an error.  Acceptable: EIO, or a clean read of original bytes only.
D=$WORK/dataset
M=$WORK/mnt-changing
mkdir -p "$D"
"$MKDATA" --seed 1 "$WORK/gen1" 1 256M >/dev/null 2>&1 || fail "bench/mkdata"
"$MKDATA" --seed 2 "$WORK/gen2" 2 160M >/dev/null 2>&1 || fail "bench/mkdata"
cp "$WORK/gen1/file-000000.bin" "$D/big.bin"
cp "$WORK/gen1/file-000000.bin" "$D/big2.bin"
cp "$WORK/gen1/file-000000.bin" "$D/big3.bin"
ORIG=$WORK/gen1/file-000000.bin
NEW=$WORK/gen2/file-000000.bin
"$MKDATA" --seed 3 "$D/other" 1 8M >/dev/null 2>&1
pf_mount "$D" "$M" || { fail "mount of the changing dataset"; finish; }

# under_read NAME FILE PAUSE_MIB CHANGE-COMMAND: the scenario above
under_read() {
	local name=$1 file=$2 pause=$3 change=$4 res
	rm -f "$WORK/ready" "$WORK/go"
	guard "$M" 90 "$HELPERS/slowread" -c 1048576 -d 2 -p $((pause << 20)) \
		-r "$WORK/ready" -g "$WORK/go" "$M/$file" "$ORIG" >"$WORK/$name.out" 2>&1 &
	local reader=$!
	local i
	for ((i = 0; i < 600; i++)); do
		[ -e "$WORK/ready" ] && break
		kill -0 $reader 2>/dev/null || break
		sleep 0.05
	done
	if [ ! -e "$WORK/ready" ]; then
		fail "$name: the reader did not get to $pause MiB"
	fi
	eval "$change"
	touch "$WORK/go"
	wait $reader
	local rc=$?
	res=$(grep '^result=' "$WORK/$name.out")
	case "$res" in
	result=eio*) ok "$name: the reader got EIO after the change ($res)" ;;
	result=complete*) ok "$name: the reader got the original content only ($res)" ;;
	result=short*) ok "$name: the reader got a prefix of the original content, then EOF ($res)" ;;
	*) fail "$name: the reader got bytes that are not the original's, or another error (exit $rc): $(cat "$WORK/$name.out")" ;;
	esac
	check "$name: the reader exited 0" test $rc -eq 0
	fresh_read "$name" "$file"
}

# fresh_read NAME FILE: a new open of FILE reads the source's current
# content: all of it, or (the kernel may still hold the old, larger size
# with the default cache_timeout) a prefix of it; never other bytes
fresh_read() {
	local name=$1 file=$2 out
	if ! guard "$M" 60 cp "$M/$file" "$WORK/fresh.bin"; then
		fail "$name: a new open cannot read the file"
		return
	fi
	if out=$(python3 - "$WORK/fresh.bin" "$D/$file" "$ORIG" <<'PY'
import sys
got = open(sys.argv[1], "rb").read()
cur = open(sys.argv[2], "rb").read()
orig = open(sys.argv[3], "rb").read()
if got == cur:
    print("the new content")
    sys.exit(0)
if cur.startswith(got):
    print("a prefix of the new content (%d of %d bytes)" % (len(got), len(cur)))
    sys.exit(0)
k = next((i for i in range(min(len(got), len(cur))) if got[i] != cur[i]), min(len(got), len(cur)))
if k == len(cur):
    tail = got[k:]
    what = "zeros" if tail == bytes(len(tail)) else "the old content" if tail == orig[k:k + len(tail)] else "other bytes"
    print("%d bytes past the new end (%d), %s" % (len(tail), len(cur), what))
else:
    blk = got[k:k + 4096]
    what = "the old content" if blk == orig[k:k + len(blk)] else "zeros" if blk == bytes(len(blk)) else "other bytes"
    print("wrong bytes from offset %d on (%s there)" % (k, what))
sys.exit(1)
PY
	); then
		ok "$name: a new open reads $out"
	else
		fail "$name: a new open reads $out"
	fi
}

# new content, shorter (160 MiB): truncated and rewritten in place
under_read "rewritten shorter" big.bin 16 \
	'cat "$NEW" >"$D/big.bin"'
# only truncated to 100 MiB: the bytes below 100 MiB stay the original's
under_read "truncated" big2.bin 16 \
	'truncate -s 100M "$D/big2.bin"'
# the first 160 MiB overwritten in place without a change of size, 1 s
# later (so only the mtime tells)
under_read "overwritten in place, same size" big3.bin 24 \
	'sleep 1; dd if="$WORK/gen2/file-000001.bin" of="$D/big3.bin" bs=1M conv=notrunc status=none'

# no pause: the file is rewritten while the reader reads on and fetches
# are in flight
cp "$ORIG" "$D/big4.bin"
guard "$M" 90 "$HELPERS/slowread" -c 1048576 -d 4 "$M/big4.bin" "$ORIG" >"$WORK/racing.out" 2>&1 &
reader=$!
sleep 0.3
cat "$NEW" >"$D/big4.bin"
wait $reader
rc=$?
res=$(grep '^result=' "$WORK/racing.out")
case "$res" in
result=eio* | result=complete* | result=short*)
	ok "rewritten while being read: only original bytes, then $res" ;;
*)	fail "rewritten while being read: bytes that are not the original's (exit $rc): $(cat "$WORK/racing.out")" ;;
esac
fresh_read "rewritten while being read" big4.bin

check "the mount is still up" mountpoint -q "$M"
check "ls works" quiet ls -l "$M"
check "another file reads byte-exact" cmp -s "$D/other/file-000000.bin" "$M/other/file-000000.bin"
check "stats still readable" quiet python3 -m json.tool "$M/.prefetchfs/stats"
pf_umount "$M"

finish
