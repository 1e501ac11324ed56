#!/bin/bash
# A ranged body read with SO_RCVLOWAT raised (curl_answer.c body_lowat()):
# the socket wakes the loop only once 256 KiB are queued, and the mark is
# back at 1 for the body's last 320 KiB, so no byte is ever waited for in
# vain.  With timeout=2 and retries=0, a wake-up missed would be an EIO.
#   1. plain HTTP behind bench/delayproxy (2 ms first byte, 16 MiB/s a
#      connection: the body comes in paced bursts): files of sizes around
#      the mark's edge (320 KiB - 1, 320 KiB, + 1) and past several
#      fetches, read whole and at random offsets, bytes exact, well within
#      the timeout; the stats count bodies read with the mark raised, no
#      error, no retry, and connections reused
#   2. HTTPS, HTTP/1.1 (as S3 serves): the same over TLS
#   3. HTTPS with HTTP/2: the mark is never raised (other streams share
#      the socket), bytes exact
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools "$HELPERS/randread"

SRC=$WORK/src
mkdir -p "$SRC"
SIZES="327679 327680 327681 1048579 4194309 9000001"
for n in $SIZES; do mkfile "$SRC/f$n.bin" "$n"; done

read_all() { # read_all MNT: every file whole, then 200 random preads
	local n
	for n in $SIZES; do
		cmp "$SRC/f$n.bin" "$1/f$n.bin" || return 1
	done
	"$HELPERS/randread" -s 7 -n 200 -m 1048576 "$1/f9000001.bin" "$SRC/f9000001.bin" >/dev/null
}
OPTS=timeout=2,retries=0,request_timeout=20

# run_part N WHAT URL [mount options]: mount URL, read, check the stats
run_part() {
	local part=$1 what=$2 url=$3 t0 ms m=$WORK/mnt$1
	shift 3
	pf_mount "$url" "$m" -o "$OPTS" "$@" || { fail "$part. mount"; return; }
	t0=$(date +%s%N)
	check "$part. $what: every file byte-exact, whole and at random offsets" read_all "$m"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	# 24 MiB at 16 MiB/s a connection, several at once: a body stalled
	# by the mark would take the 2 s timeout and fail above
	check "$part. $what: read in $ms ms (a stall would take 2000)" [ "$ms" -lt 15000 ]
	stats_json "$m" >"$WORK/stats$part.json"
	STATS=$WORK/stats$part.json
	stats_check "$part. no transport error or retry" "$STATS" \
		'tr["errors"] == 0 and tr["retries"] == 0 and tr["resumed"] == 0'
	stats_check "$part. connections reused" "$STATS" 'tr["connects"] < tr["requests"]'
	# fetches served from memory at once never reach the store
	stats_check "$part. the store said when fetches' first bytes came" "$STATS" \
		't["fetches_started"] > 0 and t["fetches_started"] <= t["fetches"]'
	pf_umount "$m"
}

# ---- 1. plain HTTP, paced ---------------------------------------------------
nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
UP=${NGINX_URL#http://}
delayproxy_start "${UP%/}" 2 16M >/dev/null || { fail "delayproxy"; finish; }
run_part 1 "http, paced" "$DELAY_URL/"
stats_check "1. bodies read with the mark raised" "$STATS" 'tr["lowat_bodies"] > 0'
nginx_stop
server_stop "$DELAY_DIR"

# ---- 2. HTTPS, HTTP/1.1 -----------------------------------------------------
nginx_start "$SRC" --tls-http1 >/dev/null || { fail "nginx (TLS, HTTP/1.1)"; finish; }
run_part 2 "https/1.1" "$NGINX_URL" -o cacert="$NGINX_CACERT"
stats_check "2. bodies read with the mark raised" "$STATS" 'tr["lowat_bodies"] > 0'
nginx_stop

# ---- 3. HTTPS, HTTP/2 -------------------------------------------------------
nginx_start "$SRC" --tls >/dev/null || { fail "nginx (TLS, HTTP/2)"; finish; }
run_part 3 "https/2" "$NGINX_URL" -o cacert="$NGINX_CACERT"
stats_check "3. no body read with the mark raised over HTTP/2" "$STATS" 'tr["lowat_bodies"] == 0'
nginx_stop
finish
