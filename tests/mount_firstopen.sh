#!/bin/bash
# The first second of a reader in name order (issue 29's "first second"),
# counted in nginx's access log, not timed, over its JSON and its HTML
# index:
#   1. a directory one level below the root's (ino/dir0) is listed at
#      mount, once; the reader's listing and opens there ask nothing more
#      of the server (no listing, no HEAD)
#   2. the reader's first open there fetches its file and asks for the
#      small files after it at once: before the second open, GETs of the
#      next 16 (4 MiB of 256 KiB files), not more
#   3. read on in name order: every file byte-exact, fetched once; the
#      directory was never listed again
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools "$MKDATA"

SRC=$WORK/src
N=40
mkdir -p "$SRC/ino"
"$MKDATA" --seed 7 "$SRC/ino/dir0" $N 256K >/dev/null 2>&1 || fail "bench/mkdata"
name() { printf 'file-%06d.bin' "$1"; }

# gets FROM TO: GETs of ino/dir0's files numbered FROM to TO in the log
gets() {
	local i n=0
	for ((i = $1; i <= $2; i++)); do
		n=$((n + $(grep -c "\"GET /ino/dir0/$(name "$i") HTTP" "$NGINX_DIR/access.log")))
	done
	echo "$n"
}
listings() { grep -c '"GET /ino/dir0/ HTTP' "$NGINX_DIR/access.log"; }
heads() { grep -c '"HEAD ' "$NGINX_DIR/access.log"; }

for fmt in json html; do
	opt=()
	[ "$fmt" = json ] && opt=(--json)
	nginx_start "$SRC" "${opt[@]}" >/dev/null || { fail "$fmt: nginx"; finish; }
	M=$WORK/m-$fmt
	pf_mount_ready "$NGINX_URL" "$M" || { fail "$fmt: mount"; nginx_stop; continue; }

	# ---- 1. listed at mount ------------------------------------------
	# (the mount waits 1 s at most for it: a loaded machine may return
	# first, and the listing ahead goes on)
	for ((i = 0; i < 100; i++)); do
		[ "$(listings)" -ge 1 ] && break
		sleep 0.05
	done
	check "1. $fmt: ino/dir0 listed ahead, once ($(listings))" [ "$(listings)" -eq 1 ]
	check "1. $fmt: the reader lists it" [ "$(ls "$M/ino/dir0" | wc -l)" -eq $N ]
	check "1. $fmt: ... without a request ($(listings))" [ "$(listings)" -eq 1 ]

	# ---- 2. the first open asks for its neighbours ---------------------
	check "2. $fmt: the first file byte-exact" cmp -s "$SRC/ino/dir0/$(name 0)" "$M/ino/dir0/$(name 0)"
	for ((i = 0; i < 200; i++)); do
		[ "$(gets 1 16)" -ge 16 ] && break
		sleep 0.05
	done
	sleep 0.2	# anything more the first open asked for has come
	check "2. $fmt: before the second open, files 1-16 fetched ($(gets 1 16))" [ "$(gets 1 16)" -eq 16 ]
	check "2. $fmt: ... and no further ($(gets 17 $((N - 1))))" [ "$(gets 17 $((N - 1)))" -eq 0 ]
	check "2. $fmt: no HEAD ($(heads))" [ "$(heads)" -eq 0 ]

	# ---- 3. in name order --------------------------------------------
	bad=0
	for ((i = 1; i < N; i++)); do
		cmp -s "$SRC/ino/dir0/$(name "$i")" "$M/ino/dir0/$(name "$i")" || { echo "  $(name "$i") differs"; bad=1; }
	done
	check "3. $fmt: every file byte-exact" [ "$bad" -eq 0 ]
	check "3. $fmt: each fetched once ($(gets 0 $((N - 1))) GETs for $N files)" [ "$(gets 0 $((N - 1)))" -eq $N ]
	check "3. $fmt: the directory listed once in all ($(listings))" [ "$(listings)" -eq 1 ]
	check "3. $fmt: no HEAD ($(heads))" [ "$(heads)" -eq 0 ]
	pf_umount "$M" || fail "$fmt: unmount"
	nginx_stop
done
finish
