#!/bin/bash
# The shared cache tier with a memcached that is slow, not down: stopped
# with SIGSTOP, its kernel still accepts connections and takes requests,
# but nothing answers.  libmemcached never ejects such a server (each call
# connects, then times out); the tier counts the timeouts itself.
#   1. mount A reads the tree: every piece stored in the tier (two
#      memcached servers, 127.0.0.2 and .3)
#   2. the second memcached stopped; mount B reads the tree: byte-exact;
#      the stopped server is set aside after SLOW_LIMIT timeouts in a row
#      (slow_ejections, servers_ejected); a second tree (48 files) read
#      after that costs no timeout per piece (counted, not timed): its
#      pieces on the stopped server come from the origin at once
#      (aside_pieces), the probe's once a second the only timeouts
#   3. the memcached continued: the tier takes it back (servers_ejected 0)
#      and a fresh mount C reads every piece from the tier again
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

SRC=$WORK/src
mkdir -p "$SRC/a" "$SRC/b"
for i in $(seq 1 24); do
	mkfile "$SRC/a/f$i.bin" $((20 * 1024 + i))
done
# (48: about half on each server, however the ring splits this run's keys)
for i in $(seq 1 48); do
	mkfile "$SRC/b/f$i.bin" $((20 * 1024 + i))
done

memcached_start 127.0.0.2 >/dev/null || { fail "memcached 1"; finish; }
MC1=$MC_SERVER
memcached_start 127.0.0.3 >/dev/null || { fail "memcached 2"; finish; }
MC2=$MC_SERVER
MCD2=$MC_DIR
MCPID2=$(cat "$MCD2/pid")
nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
SECRET=$WORK/secret
tier_secret "$SECRET"
# next_file=off: one file read at a time, so that the counts below are
# the reads' own
OPTS="shared_cache=$MC1,$MC2,shared_secret=$SECRET,shared_timeout=300,next_file=off,fill=off"
resume() { kill -CONT "$MCPID2" 2>/dev/null; }

# read_tree MNT DIR: every file of DIR, one after the other
read_tree() {
	local f
	for f in $(cd "$SRC/$2" && ls); do
		cmp -s "$SRC/$2/$f" "$1/$2/$f" || { echo "differs: $2/$f"; return 1; }
	done
}

# ---- 1. the tree stored ----------------------------------------------------------

A=$WORK/a
pf_mount_ready "$NGINX_URL" "$A" -o "$OPTS" || { fail "mount A"; finish; }
check "A: byte-exact" read_tree "$A" a
for ((i = 0; i < 100; i++)); do
	[ "$(stats_eval "$A" "sc['stored'] >= 24")" = True ] && break
	sleep 0.1
done
stats_check "A: every piece stored" "$A" "sc['stored'] == 24 and sc['timeouts'] == 0"
pf_umount "$A" || fail "unmount A"

# ---- 2. one memcached stopped ----------------------------------------------------

kill -STOP "$MCPID2"
B=$WORK/b
pf_mount_ready "$NGINX_URL" "$B" -o "$OPTS" || { resume; fail "mount B"; finish; }
check "stopped: byte-exact" read_tree "$B" a
echo "B after a/: $(stats_eval "$B" "{k: sc[k] for k in ('pieces_hit', 'pieces_missed', 'timeouts', 'slow_ejections', 'aside_pieces', 'servers_ejected', 'servers_up')}")"
stats_check "stopped: the server set aside after a few timeouts" "$B" \
	"sc['slow_ejections'] >= 1 and sc['servers_ejected'] == 1 and sc['timeouts'] <= 8 and sc['pieces_hit'] >= 1"
t0=$(stats_eval "$B" "sc['timeouts']")
a0=$(stats_eval "$B" "sc['aside_pieces']")
check "stopped, set aside: byte-exact" read_tree "$B" b
t1=$(stats_eval "$B" "sc['timeouts']")
a1=$(stats_eval "$B" "sc['aside_pieces']")
echo "B after b/: timeouts $t0 -> $t1, pieces past the server set aside $a0 -> $a1"
# (the writer's probe asks every server once a second: a timeout each)
check "set aside: its pieces cost no timeout each ($((a1 - a0)) pieces, $((t1 - t0)) timeouts)" \
	[ $((a1 - a0)) -ge 10 ] && [ $((t1 - t0)) -le 3 ]

# ---- 3. continued ------------------------------------------------------------------

resume
for ((i = 0; i < 40; i++)); do
	[ "$(stats_eval "$B" "sc['servers_ejected'] == 0 and sc['servers_up'] == 2")" = True ] && break
	sleep 0.25
done
stats_check "continued: taken back" "$B" "sc['servers_ejected'] == 0 and sc['servers_up'] == 2"
pf_umount "$B" || fail "unmount B"
before=$(data_gets)
C=$WORK/c
pf_mount_ready "$NGINX_URL" "$C" -o "$OPTS" || { fail "mount C"; finish; }
check "continued: byte-exact" read_tree "$C" a
after=$(data_gets)
stats_check "continued: every piece from the tier" "$C" "sc['pieces_hit'] == 24 and sc['timeouts'] == 0"
check "continued: no GET of the origin ($((after - before)))" [ "$after" -eq "$before" ]
pf_umount "$C" || fail "unmount C"
finish
