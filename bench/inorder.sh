#!/bin/bash
# bench/inorder.sh - the first second of readers in name order, side by
# side in one run: the local copy (the floor), then each build or option
# set given, alternated for --rounds.
#
#   make bench && bench/inorder.sh [--rounds 2] [--files 128] [--size 256K]
#                                  [--latency-ms 50] [--bw 64M]
#                                  [--store json|html|s3]
#                                  LABEL=BINARY[,OPTIONS] ...
#
#   bench/inorder.sh old=/tmp/prefetchfs.old new=./prefetchfs
#   bench/inorder.sh --store s3 pf=./prefetchfs disk=./prefetchfs,cache_dir=@
#
# In OPTIONS, cache_dir=@ stands for a new empty directory each mount.
# Four readers (bench/inorder.py), each listing its own directory of
# --files files of --size and reading them whole in name order, 40 ms of
# compute after every 8 files: the local copy does it in about 0.7 s, so
# what a mount adds is its start: the listing, the first opens, learning
# the order.  The store (--store): nginx's JSON index (an open needs no
# HEAD), its HTML index, or the S3 server of tests/s3 (ListObjectsV2),
# behind bench/delayproxy (--latency-ms, --bw a connection).  Each row: the
# readers' mean data wait % (and each one's), the slowest one's wall time,
# its first file's and its listing's ms, and the daemon's READs that
# waited and their total wait (its stats).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=2
FILES=128
SIZE=256K
LAT=50
BW=64M
STORE=json
SPECS=()
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--files) FILES=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--latency-ms) LAT=$2; shift 2 ;;
	--bw) BW=$2; shift 2 ;;
	--store) STORE=$2; shift 2 ;;
	-h|--help) sed -n '2,/^# waited and their/p' "$0"; exit 0 ;;
	-*) echo "bench/inorder.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	*=*) SPECS+=("$1"); shift ;;
	*) echo "bench/inorder.sh: '$1' is not LABEL=BINARY[,OPTIONS] (see --help)" >&2; exit 2 ;;
	esac
done
[ ${#SPECS[@]} -gt 0 ] || SPECS=("prefetchfs=./prefetchfs")
for t in bench/delayproxy bench/mkdata; do
	[ -x "$t" ] || { echo "bench/inorder.sh: $t missing: run 'make bench' first" >&2; exit 1; }
done
command -v nginx >/dev/null || { echo "bench/inorder.sh: nginx missing: run tests/deps.sh" >&2; exit 1; }

. tests/lib.sh
. tests/servers.sh
. bench/lib.sh
set +u
mkdir -p "$WORK/www/ino"
for d in 0 1 2 3; do
	bench/mkdata --seed $((d + 1)) "$WORK/www/ino/dir$d" "$FILES" "$SIZE" >/dev/null
done
find "$WORK/www" -type f -exec cat {} + >/dev/null
IN=/ino		# the readers' directories, under the mount
case $STORE in
json|html)
	fmt=()
	[ "$STORE" = json ] && fmt=(--json)
	nginx_start "$WORK/www" "${fmt[@]}" >/dev/null || { echo "bench/inorder.sh: nginx did not start" >&2; exit 1; }
	UP=${NGINX_URL#http://}
	UP=${UP%/}
	;;
s3)
	s3_start bkt >/dev/null || { echo "bench/inorder.sh: the S3 server did not start" >&2; exit 1; }
	# (the test server lists only the directories holding objects right
	# below a prefix: ds/dir0/..., not ds/ino/dir0/...)
	s3_put_tree bkt ds/ "$WORK/www/ino" || exit 1
	# node compiles the server's GET path in its first requests: warm it
	# straight (not through delayproxy)
	warm=()
	for f in "$WORK"/www/ino/dir0/*; do
		warm+=(-o /dev/null "$S3_ENDPOINT/bkt/ds/dir0/${f##*/}")
	done
	s3_curl --no-progress-meter --parallel --parallel-max 8 "${warm[@]}" >/dev/null ||
		{ echo "bench/inorder.sh: the S3 server does not serve its objects" >&2; exit 1; }
	UP=127.0.0.1:$S3_PORT
	IN=""
	export AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET AWS_REGION=$S3_REGION
	;;
*) echo "bench/inorder.sh: --store json, html or s3" >&2; exit 2 ;;
esac
delayproxy_start "$UP" "$LAT" "$BW" >/dev/null || { echo "bench/inorder.sh: delayproxy did not start" >&2; exit 1; }
# mount SRC-less: the source and its options for this store
src_of() {
	if [ "$STORE" = s3 ]; then
		echo "s3://bkt/ds/"
	else
		echo "$DELAY_URL/"
	fi
}
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
row() { # ROUND LABEL OUT [STATS]
	local first list
	first=$(field first_ms "$3" | tr / '\n' | sort -n | tail -1)
	list=$(field list_ms "$3" | tr / '\n' | sort -n | tail -1)
	printf '%-5s %-12s %6s  %-19s %6s %8s %7s  %s\n' "$1" "$2" "$(field data_wait_pct "$3")" \
		"$(field each "$3" | tr / ' ')" "$(field wall_s "$3")" "$first" "$list" "${4:-}"
}

echo "# bench/inorder.sh ($(date -u '+%Y-%m-%d %H:%M'), $(bench_machine))"
echo "# 4 readers x $FILES files of $SIZE in name order, 40 ms after every 8; $STORE store behind delayproxy $LAT ms, $BW/s a connection"
printf '%-5s %-12s %6s  %-19s %6s %8s %7s  %s\n' round label wait each wall_s first_ms list_ms "daemon: READs waited, wait ms"
n=0
for round in $(seq "$ROUNDS"); do
	row "$round" local "$(/usr/bin/python3 bench/inorder.py "$WORK/www/ino")"
	for spec in "${SPECS[@]}"; do
		n=$((n + 1))
		label=${spec%%=*}
		rest=${spec#*=}
		bin=${rest%%,*}
		opts=${rest#"$bin"}
		opts=${opts#,}
		if [[ ",$opts," == *",cache_dir=@,"* ]]; then
			mkdir -p "$WORK/cache.$n"
			opts=${opts/cache_dir=@/cache_dir=$WORK/cache.$n}
		fi
		[ "$STORE" = s3 ] && opts="endpoint=$DELAY_URL${opts:+,$opts}"
		PF=$bin
		pf_mount "$(src_of)" "$WORK/m.$n" ${opts:+-o "$opts"} >/dev/null ||
			{ echo "bench/inorder.sh: $label: mount failed" >&2; exit 1; }
		out=$(/usr/bin/python3 bench/inorder.py "$WORK/m.$n$IN")
		st=$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["totals"]; print(t["waits"], "%.0f" % t["wait_ms"])' \
			"$WORK/m.$n/.prefetchfs/stats")
		row "$round" "$label" "$out" "$st"
		pf_umount "$WORK/m.$n"
	done
done
set +e
finish >/dev/null
