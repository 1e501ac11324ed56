#!/bin/bash
# request_timeout bounds what a read waits (issue 28): a server that sends
# 1 KiB/s (nginx behind bench/delayproxy), -o request_timeout=15.  Each
# fetch fails at 15 s, and the kernel then retries the READ page by page,
# each retry a fetch of its own: a read() waited through several
# deadlines (dd 47 s, cat 58 s).  Now, at the same time on two files:
#   1. dd bs=64k count=1: EIO within 16 s
#   2. cat of the whole file: EIO within 16 s
#   3. the same range read again at once: EIO at once (no refetch)
# Asserts times: not marked parallel.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools "$TOP/bench/delayproxy"

SRC=$WORK/src
M=$WORK/mnt
mkdir -p "$SRC"
mkfile "$SRC/f1.bin" $((8 << 20))
mkfile "$SRC/f2.bin" $((8 << 20))
nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
delayproxy_start "127.0.0.1:$NGINX_PORT" 0 1024 >/dev/null || { fail "delayproxy"; finish; }
pf_mount_ready "$DELAY_URL/" "$M" -o request_timeout=15 || { fail "mount"; finish; }

# timed OUT CMD...: runs CMD (killed at 70 s: a build that waits several
# deadlines), writes "STATUS MILLISECONDS" to OUT
timed() {
	local out=$1 t0 rc
	shift
	t0=$(date +%s%N)
	timeout -s KILL 70 "$@" >/dev/null 2>"$out.err"
	rc=$?
	echo "$rc $((($(date +%s%N) - t0) / 1000000))" >"$out"
}
timed "$WORK/dd" dd if="$M/f1.bin" of=/dev/null bs=64k count=1 &
timed "$WORK/cat" cat "$M/f2.bin" &
wait
read -r rc ms <"$WORK/dd"
echo "dd: exit $rc after $ms ms: $(tail -1 "$WORK/dd.err")"
check "1. dd: fails ($rc)" [ "$rc" -ne 0 ]
check "1. dd: with EIO" grep -q "Input/output error" "$WORK/dd.err"
check "1. dd: within 16 s ($ms ms)" [ "$ms" -le 16000 ]
read -r rc ms <"$WORK/cat"
echo "cat: exit $rc after $ms ms: $(tail -1 "$WORK/cat.err")"
check "2. cat: fails ($rc)" [ "$rc" -ne 0 ]
check "2. cat: with EIO" grep -q "Input/output error" "$WORK/cat.err"
check "2. cat: within 16 s ($ms ms)" [ "$ms" -le 16000 ]
timed "$WORK/again" dd if="$M/f1.bin" of=/dev/null bs=64k count=1
read -r rc ms <"$WORK/again"
check "3. the range again: EIO at once ($ms ms)" [ "$rc" -ne 0 ] && [ "$ms" -le 2000 ]

finish
