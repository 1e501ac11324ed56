#!/bin/bash
# The shared cache tier's leases: three nodes (three mounts, each with its
# own memcached on 127.0.0.2-4) read the same file at the same moment from
# one origin (nginx behind bench/delayproxy, 50 ms and 64 MiB/s a
# connection).  For each piece one node takes the lease and reads it from
# the origin; the others wait for it in the tier.  The origin's bytes
# (nginx's access log) stay well under the 3 x the file three nodes alone
# read: at most 1.5 x.  Every read byte-exact.  Then the leases are gone
# once the pieces are stored, and a fourth mount finding the values evicted
# reads them at once, waiting for no lease.
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

tier_nodes_start "$SRC" 3 50

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
# ---- a lease outlives no value ----------------------------------------------
# Each node deletes its lease of a piece once it stored the piece: left to
# expire (8 s with shared_lease=2000), a lease outlived a value memcached
# evicted meanwhile, and a node missing the piece waited 3 x shared_lease
# for nothing.  The servers hold no lease once the pieces are stored; the
# pieces' values deleted (an eviction), a fourth mount reads the file at
# once from the origin, waiting for no lease.
# mc_keys KIND [SERVER...]: the keys of KIND (D: values, L: leases) on the
# SERVERs (all three if none)
mc_keys() {
	local kind=$1 m
	shift
	[ $# -gt 0 ] || set -- "${MCS[@]}"
	for m in "$@"; do
		mc_cmd "$m" "lru_crawler metadump all" | grep -o "key=$kind[0-9a-f]*"
	done | sed 's/^key=//'
}
released=false
for ((k = 0; k < 50; k++)); do
	[ "$(sum "sc['leases_released']")" -ge $((SIZE / (512 << 10))) ] &&
		[ -z "$(mc_keys L)" ] && { released=true; break; }
	sleep 0.1
done
check "leases: released once their pieces are stored ($(sum "sc['leases_released']") released, $(mc_keys L | wc -l) left)" $released
for m in "${MCS[@]}"; do
	for k in $(mc_keys D "$m"); do
		mc_cmd "$m" "delete $k" >/dev/null
	done
done
check "leases: the pieces' values are gone (evicted)" [ -z "$(mc_keys D)" ]
E=$WORK/e
pf_mount_ready "$DELAY_URL/" "$E" -o "shared_cache=$LIST,shared_secret=$SECRET,shared_self=${MCS[0]},shared_timeout=500,shared_lease=2000,fill=off" >/dev/null ||
	fail "mount E"
t0=$(date +%s%N)
check "evicted: byte-exact" cmp "$SRC/shared.bin" "$E/shared.bin"
ms=$((($(date +%s%N) - t0) / 1000000))
echo "  evicted: read in $ms ms: $(stats_eval "$E" "{k: sc[k] for k in ('pieces_hit', 'pieces_missed', 'leases_won', 'leases_waited', 'leases_timed_out')}")"
stats_check "evicted: every piece from the origin, no lease waited for" "$E" \
	"sc['pieces_missed'] == $((SIZE / (512 << 10))) and sc['leases_waited'] == 0"
pf_umount "$E"

without=$(together again.bin 0)
echo "the same without leases: $without origin bytes ($(python3 -c "print('%.2f' % ($without / $SIZE))") x)"
finish
