#!/bin/bash
# The shared cache tier when memcached fails: reads never fail and every
# byte is exact.  Two memcached servers (127.0.0.2, 127.0.0.3), one origin
# (nginx behind bench/delayproxy, so that a read lasts long enough to be
# cut).
#   1. one memcached killed in the middle of a read: byte-exact, and the
#      tier's counters show the server gone (servers_up, server_failures)
#      and ejected by the clients (ejections) as reads go on
#   2. both memcached restarted empty: the next mount reads every byte
#      from the origin, exact, and stores it again; the mount after it
#      reads it from the tier again
#   3. every server down from the start: the mount works, reads go to the
#      origin
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

SRC=$WORK/src
mkdir -p "$SRC/d"
mkfile "$SRC/big.bin" $((24 << 20))
for i in $(seq 1 24); do
	mkfile "$SRC/d/s$i.bin" $((300 * 1024 + i))
done

memcached_start 127.0.0.2 >/dev/null || { fail "memcached 1"; finish; }
MC1=$MC_SERVER
MCD1=$MC_DIR
memcached_start 127.0.0.3 >/dev/null || { fail "memcached 2"; finish; }
MC2=$MC_SERVER
MCD2=$MC_DIR
nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
# 20 ms and 24 MiB/s a connection: big.bin takes a second or more
delayproxy_start "127.0.0.1:$NGINX_PORT" 20 $((24 << 20)) >/dev/null || { fail "delayproxy"; finish; }
SECRET=$WORK/secret
tier_secret "$SECRET"
OPTS="shared_cache=$MC1,$MC2,shared_secret=$SECRET,shared_timeout=500"

# ---- 1. a memcached killed mid-read --------------------------------------------

A=$WORK/a
pf_mount_ready "$DELAY_URL/" "$A" -o "$OPTS" || { fail "mount A"; finish; }
cmp "$SRC/big.bin" "$A/big.bin" >"$WORK/cmp.out" 2>&1 &
reader=$!
sleep 0.4
kill -9 "$(cat "$MCD2/pid")"
wait "$reader"
rc=$?
check "killed mid-read: the read is byte-exact" [ $rc -eq 0 ]
cat "$WORK/cmp.out"
# reads go on after the kill: each lookup client meets the dead server,
# leaves it alone for a second, meets it again and ejects it
for i in 1 2 3; do
	sleep 1.1
	cat "$A/d/s$i.bin" >/dev/null
done
check "killed mid-read: the tree is byte-exact" all_same "$A"
stats_check "killed: the probe sees one server of two" "$A" "sc['servers_up'] == 1 and sc['server_failures'] >= 1"
stats_check "killed: the clients failed on it, then ejected it" "$A" "sc['errors'] >= 1 and sc['ejections'] >= 1"
echo "A: $(stats_eval "$A" sc)"
pf_umount "$A" || fail "unmount A"

# ---- 2. restarted empty -----------------------------------------------------------

memcached_restart "$MCD1" >"$WORK/restart.log" || { cat "$WORK/restart.log"; fail "restart memcached 1"; finish; }
memcached_restart "$MCD2" >"$WORK/restart.log" || { cat "$WORK/restart.log"; fail "restart memcached 2"; finish; }
before=$(data_gets)
B=$WORK/b
pf_mount_ready "$DELAY_URL/" "$B" -o "$OPTS" || { fail "mount B"; finish; }
check "restarted empty: byte-exact" all_same "$B"
after=$(data_gets)
stats_check "restarted empty: every piece from the origin" "$B" "sc['pieces_hit'] == 0 and sc['pieces_missed'] > 0"
check "restarted empty: the origin served them ($((after - before)) GETs)" [ "$after" -gt "$before" ]
# the stores finish, then a third node reads everything from the tier
for ((i = 0; i < 100; i++)); do
	[ "$(stats_eval "$B" "sc['stored'] == sc['pieces_missed']")" = True ] && break
	sleep 0.1
done
pf_umount "$B" || fail "unmount B"
before=$(data_gets)
C=$WORK/c
pf_mount_ready "$DELAY_URL/" "$C" -o "$OPTS" || { fail "mount C"; finish; }
check "after the restart: byte-exact" all_same "$C"
after=$(data_gets)
check "after the restart: the tier serves again (GETs $((after - before)))" [ "$after" -eq "$before" ]
pf_umount "$C" || fail "unmount C"

# ---- 3. every server down --------------------------------------------------------

server_stop "$MCD1"
server_stop "$MCD2"
D=$WORK/d
pf_mount_ready "$DELAY_URL/" "$D" -o "$OPTS" || { fail "mount with every server down"; finish; }
check "every server down: byte-exact" all_same "$D"
stats_check "every server down: none answers, nothing from the tier" "$D" "sc['servers_up'] == 0 and sc['pieces_hit'] == 0"
pf_umount "$D" || fail "unmount D"
finish
