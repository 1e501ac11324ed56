#!/bin/bash
# The shared cache tier's leases: three nodes (three mounts, each with its
# own memcached on 127.0.0.2-4) read the same file at the same moment from
# one origin (nginx behind bench/delayproxy, 50 ms and 64 MiB/s a
# connection).  For each piece one node takes the lease and reads it from
# the origin; the others wait for it in the tier.  The origin's bytes
# (nginx's access log) stay well under the 3 x the file three nodes alone
# read: at most 1.5 x.  Every read byte-exact.
#   then without leases (shared_lease=0), the same, for the comparison
#   printed (not checked: the machine's timing decides it)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

SRC=$WORK/src
mkdir -p "$SRC"
SIZE=$((32 << 20))
mkfile "$SRC/shared.bin" $SIZE
mkfile "$SRC/again.bin" $SIZE

MCS=()
for a in 2 3 4; do
	memcached_start 127.0.0.$a >/dev/null || { fail "memcached $a"; finish; }
	MCS+=("$MC_SERVER")
done
LIST=$(IFS=,; echo "${MCS[*]}")
nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
delayproxy_start "127.0.0.1:$NGINX_PORT" 50 $((64 << 20)) >/dev/null || { fail "delayproxy"; finish; }
SECRET=$WORK/secret
tier_secret "$SECRET"

# origin_bytes FILE: bytes nginx sent of FILE's data so far
origin_bytes() {
	awk -v f="/$1" '$7 == f && $6 == "\"GET" { s += $10 } END { print s + 0 }' "$NGINX_DIR/access.log"
}

# together FILE LEASE_MS: three mounts read FILE at the same moment;
# prints the origin's bytes of it
together() {
	local f=$1 lease=$2 i pids=() m
	for i in 0 1 2; do
		m=$WORK/n$i.$lease
		pf_mount_ready "$DELAY_URL/" "$m" -o "shared_cache=$LIST,shared_secret=$SECRET,shared_self=${MCS[$i]},shared_timeout=500,shared_lease=$lease,fill=off" >&2 ||
			{ fail "mount $i"; return 1; }
	done
	for i in 0 1 2; do
		cmp "$SRC/$f" "$WORK/n$i.$lease/$f" >&2 &
		pids+=($!)
	done
	for i in 0 1 2; do
		wait "${pids[$i]}" || fail "node $i: $f not byte-exact"
	done
	for i in 0 1 2; do
		echo "node $i: $(stats_eval "$WORK/n$i.$lease" "{k: sc[k] for k in ('pieces_hit', 'pieces_missed', 'leases_won', 'leases_waited', 'leases_timed_out')}")" >&2
	done
	origin_bytes "$f"
}

with=$(together shared.bin 2000)
sum() { # sum EXPR: EXPR over the three mounts of the leased run, summed
	local i s=0
	for i in 0 1 2; do
		s=$((s + $(stats_eval "$WORK/n$i.2000" "$1")))
	done
	echo $s
}
won=$(sum "sc['leases_won']")
late=$(sum "sc['leases_timed_out']")
waited=$(sum "sc['leases_waited']")
echo "leases: $with origin bytes for a file of $SIZE ($(python3 -c "print('%.2f' % ($with / $SIZE))") x); won $won, waited $waited"
check "leases: every piece read from the origin once or so (<= 1.5 x)" [ "$with" -le $((SIZE * 3 / 2)) ]
check "leases: some nodes waited for another's piece" [ "$waited" -gt 0 ]
check "leases: each piece read under a lease or after a wait ran out ($won + $late of $((SIZE / (512 << 10))))" [ $((won + late)) -ge $((SIZE / (512 << 10))) ]
without=$(together again.bin 0)
echo "the same without leases: $without origin bytes ($(python3 -c "print('%.2f' % ($without / $SIZE))") x)"
finish
