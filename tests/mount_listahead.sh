#!/bin/bash
# The source's first directories listed at mount (-o list_ahead),
# breadth first, over nginx's JSON index (access log: which listing was
# asked when):
#   1. default: the mount returns with every directory of the root
#      listed, and those one level further; opening, stat-ing and
#      listing them afterwards makes no listing request; the stats count
#      them; bytes exact
#   2. list_ahead=3: the first three (in name order) at mount, each other
#      directory at its first use; no directory listed twice
#   3. list_ahead=0: nothing but the root before a directory is used
#   4. a directory the server refuses (faultd, 403): the mount and the
#      others are fine, the refused one fails at its use
#   5. behind a 700 ms first byte, 20 directories (three rounds of 8): the
#      mount returns before all are listed (it waits 1 s at most), the rest
#      are listed in the background, each once; an unmount while listings
#      are still in flight ends the daemon at once
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

SRC=$WORK/src
M=$WORK/mnt
for i in $(seq -w 1 12); do
	mkdir -p "$SRC/d$i"
	mkfile "$SRC/d$i/f.bin" $((40000 + 10#$i))
done
mkdir -p "$SRC/d01/sub" "$SRC/zz-refused"
mkfile "$SRC/d01/sub/g.bin" 30000
mkfile "$SRC/top.bin" 20000
mkfile "$SRC/zz-refused/h.bin" 1000

since() { tail -n +"$(($1 + 1))" "$NGINX_DIR/access.log"; }
lines() { wc -l <"$NGINX_DIR/access.log"; }
# listed N DIR: how many listing GETs of DIR/ after line N
listed() { since "$1" | grep -c "\"GET /$2/ HTTP"; }
# dirs_listed N: how many listing GETs of a d* directory after line N
dirs_listed() { since "$1" | grep -cE '"GET /d[0-9]+/ HTTP'; }
ahead() { stats_eval "$1" 'tr["dirs_listed_ahead"]'; }
read_all() {
	local i
	for i in $(seq -w 1 12); do
		cmp -s "$SRC/d$i/f.bin" "$M/d$i/f.bin" || { echo "d$i/f.bin differs"; return 1; }
	done
}

nginx_start "$SRC" --json >/dev/null || { fail "nginx"; finish; }

# ---- 1. default -----------------------------------------------------------
n=$(lines)
pf_mount_ready "$NGINX_URL" "$M" || { fail "mount"; finish; }
check "1. every directory of the root listed by the time the mount returns ($(dirs_listed "$n") of 12)" \
	[ "$(dirs_listed "$n")" -eq 12 ]
n1=$(lines)
ls -l "$M"/d* >/dev/null
stat "$M"/d*/f.bin >/dev/null
check "1. bytes exact" read_all
check "1. no listing request after the mount for them ($(dirs_listed "$n1"))" \
	[ "$(dirs_listed "$n1")" -eq 0 ]
check "1. a directory one level further is listed ahead too" [ "$(listed "$n" d01/sub)" -eq 1 ]
check "1. ... read" cmp -s "$SRC/d01/sub/g.bin" "$M/d01/sub/g.bin"
ls "$M/d01/sub" >/dev/null
check "1. ... and not listed again" [ "$(listed "$n" d01/sub)" -eq 1 ]
check "1. stats: 14 directories listed ahead, d01-d12, zz-refused and d01/sub ($(ahead "$M"))" [ "$(ahead "$M")" = 14 ]
check "1. a top-level file as before" cmp -s "$SRC/top.bin" "$M/top.bin"
pf_umount "$M" || fail "unmount"

# ---- 2. list_ahead=3 ------------------------------------------------------
n=$(lines)
pf_mount_ready "$NGINX_URL" "$M" -o list_ahead=3 || { fail "mount list_ahead=3"; finish; }
check "2. three directories listed at mount ($(dirs_listed "$n"))" [ "$(dirs_listed "$n")" -eq 3 ]
check "2. the first three in name order" \
	[ "$(listed "$n" d01)$(listed "$n" d02)$(listed "$n" d03)" = 111 ]
check "2. bytes exact" read_all
bad=0
for i in $(seq -w 1 12); do
	[ "$(listed "$n" "d$i")" -eq 1 ] || { echo "  d$i listed $(listed "$n" "d$i") times"; bad=1; }
done
check "2. every directory listed once in all" [ "$bad" -eq 0 ]
check "2. stats: 3 listed ahead ($(ahead "$M"))" [ "$(ahead "$M")" = 3 ]
pf_umount "$M" || fail "unmount"

# ---- 3. list_ahead=0 ------------------------------------------------------
n=$(lines)
pf_mount_ready "$NGINX_URL" "$M" -o list_ahead=0 || { fail "mount list_ahead=0"; finish; }
sleep 0.3
check "3. no directory listed before its use ($(dirs_listed "$n"))" [ "$(dirs_listed "$n")" -eq 0 ]
check "3. bytes exact" read_all
check "3. then each once ($(dirs_listed "$n"))" [ "$(dirs_listed "$n")" -eq 12 ]
pf_umount "$M" || fail "unmount"

# ---- 4. a refused directory (faultd: its listing answered 403) --------------
faultd_start "$SRC" --json-index --fault 'path=/zz-refused/&mode=status:403&count=inf' >/dev/null ||
	{ fail "faultd"; finish; }
pf_mount_ready "$FAULTD_URL/" "$M" || { fail "mount with a refused directory"; finish; }
check "4. the others are fine" read_all
check "4. the refused one fails at its use" eval '! cat "$M/zz-refused/h.bin" >/dev/null 2>&1'
check "4. stats: 13 listed ahead, d01/sub too ($(ahead "$M"))" [ "$(ahead "$M")" = 13 ]
pf_umount "$M" || fail "unmount"
server_stop "$FAULTD_DIR"

# ---- 5. a slow store: the mount waits 1 s at most ------------------------------
BIG=$WORK/big
for i in $(seq -w 1 20); do
	mkdir -p "$BIG/d$i"
	mkfile "$BIG/d$i/f.bin" 1000
done
nginx_stop
nginx_start "$BIG" --json >/dev/null || { fail "nginx (big)"; finish; }
UP=${NGINX_URL#http://}
delayproxy_start "${UP%/}" 700 64M >/dev/null || { fail "delayproxy"; finish; }
n=$(lines)
pf_mount_ready "$DELAY_URL/" "$M" || { fail "mount behind 700 ms"; finish; }
a0=$(ahead "$M")
check "5. the mount returned before all 20 were listed ($a0)" [ "$a0" -lt 20 ]
for ((i = 0; i < 100; i++)); do
	[ "$(ahead "$M")" = 20 ] && break
	sleep 0.1
done
check "5. the rest listed in the background ($(ahead "$M") of 20)" [ "$(ahead "$M")" = 20 ]
check "5. each once ($(dirs_listed "$n"))" [ "$(dirs_listed "$n")" -eq 20 ]
check "5. bytes exact" cmp -s "$BIG/d07/f.bin" "$M/d07/f.bin"
pf_umount "$M" || fail "unmount"
# an unmount with listings in flight: the daemon does not wait for them
server_stop "$DELAY_DIR"
delayproxy_start "${UP%/}" 5000 64M >/dev/null || { fail "delayproxy (5 s)"; finish; }
pf_mount_ready "$DELAY_URL/" "$M" || { fail "mount behind 5 s"; finish; }
pid=$(cat "$WORK/pid.mnt")
t0=$(date +%s%N)
fusermount3 -u "$M"
wait_gone "$pid" 100
ms=$((($(date +%s%N) - t0) / 1000000))
check "5. an unmount with listings in flight ends the daemon at once (${ms} ms)" exited "$pid"

finish
