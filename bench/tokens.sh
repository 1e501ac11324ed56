#!/bin/bash
# bench/tokens.sh - an LLM token file read at random through numpy.memmap
# (nanoGPT's get_batch), side by side in one run: the local copy (the
# floor), prefetchfs with and without a disk cache, rclone.
#
#   make bench && bench/tokens.sh [--size 1G] [--seconds 60] [--compute-ms 30]
#                                 [--latency-ms 50] [--bw 64M] [--no-rclone]
#                                 [--no-check] [LABEL=BINARY[,OPTIONS] ...]
#
#   bench/tokens.sh
#   bench/tokens.sh old=/tmp/prefetchfs.main,max_memory=256M,cache_dir \
#                   new=./prefetchfs,max_memory=256M,cache_dir
#
# The store: one --size file of uint16 tokens (examples/memmap_tokens.py
# --make) served by nginx behind bench/delayproxy (--latency-ms before the
# first byte of every response, --bw per connection); prefetchfs reads an
# nginx with the JSON index, rclone one with the HTML index (its :http:
# backend parses HTML only), each behind its own delayproxy with the same
# settings, whose byte counters give each row's bytes fetched.  The reader:
# examples/memmap_tokens.py --mode random, 12 windows of 1,025 tokens from
# random offsets per step, --compute-ms after each, for --seconds; every
# window is compared with the local copy, outside the timed part (unless
# --no-check).  Each system is mounted fresh, with an empty cache.
#
# Rows: local copy; then each LABEL=BINARY[,OPTIONS] given (OPTIONS are -o
# options; a bare "cache_dir" becomes cache_dir=a fresh directory), by
# default pf=./prefetchfs,max_memory=256M and
# pf+disk=./prefetchfs,max_memory=256M,cache_dir; then rclone mount
# --vfs-cache-mode full.  Columns: data wait % over the run and over its
# first and second halves, windows/s, bytes fetched from the store / the
# file's size, the daemon's peak RSS (VmHWM) against max_memory; under a
# prefetchfs row, what it read from its backend (the disk tier's hits
# included) for the bytes of the kernel's READs, the background fill's
# state, and the advice line of its stats and its log, if any.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=1G
SECS=60
COMPUTE=30
LAT=50
BW=64M
RCLONE=1
CHECK=1
SPECS=()
while [ $# -gt 0 ]; do
	case $1 in
	--size) SIZE=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--compute-ms) COMPUTE=$2; shift 2 ;;
	--latency-ms) LAT=$2; shift 2 ;;
	--bw) BW=$2; shift 2 ;;
	--no-rclone) RCLONE=0; shift ;;
	--no-check) CHECK=0; shift ;;
	-h|--help) sed -n '2,/^# background fill/p' "$0"; exit 0 ;;
	-*) echo "bench/tokens.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	*=*) SPECS+=("$1"); shift ;;
	*) echo "bench/tokens.sh: '$1' is not LABEL=BINARY[,OPTIONS] (see --help)" >&2; exit 2 ;;
	esac
done
[ ${#SPECS[@]} -gt 0 ] || SPECS=("pf=./prefetchfs,max_memory=256M" "pf+disk=./prefetchfs,max_memory=256M,cache_dir")
for spec in "${SPECS[@]}"; do
	rest=${spec#*=}
	bin=${rest%%,*}
	[ -x "$bin" ] || { echo "bench/tokens.sh: $spec: '$bin' is not an executable" >&2; exit 2; }
done
[ -x bench/delayproxy ] || { echo "bench/tokens.sh: bench/delayproxy missing: run 'make bench' first" >&2; exit 1; }
command -v nginx >/dev/null || { echo "bench/tokens.sh: nginx missing: run tests/deps.sh" >&2; exit 1; }
command -v rclone >/dev/null || RCLONE=0
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || { echo "bench/tokens.sh: needs python3-numpy" >&2; exit 1; }

. tests/lib.sh
. tests/servers.sh
. bench/lib.sh
set +u
mkdir -p "$WORK/www"
$PY examples/memmap_tokens.py --make "$WORK/www/train.bin" "$SIZE" >/dev/null
FILE_BYTES=$(stat -c %s "$WORK/www/train.bin")
cat "$WORK/www/train.bin" >/dev/null
# store [--json]: nginx over $WORK/www behind a delayproxy; sets DELAY_*
store() {
	nginx_start "$WORK/www" "$@" >/dev/null ||
		{ echo "bench/tokens.sh: nginx did not start" >&2; exit 1; }
	local up=${NGINX_URL#http://}
	delayproxy_start "${up%/}" "$LAT" "$BW" >/dev/null ||
		{ echo "bench/tokens.sh: delayproxy did not start" >&2; exit 1; }
}
store --json
PF_URL=$DELAY_URL/
PF_PROXY=$DELAY_PID
PF_PLOG=$DELAY_DIR/log
if [ $RCLONE = 1 ]; then
	store
	RC_URL=$DELAY_URL/
	RC_PROXY=$DELAY_PID
	RC_PLOG=$DELAY_DIR/log
fi

# proxy_bytes PID LOG: bytes the delayproxy PID has sent to clients so far
proxy_bytes() {
	local n0 i
	n0=$(grep -c 'bytes to clients' "$2")
	kill -USR1 "$1"
	for ((i = 0; i < 300; i++)); do
		[ "$(grep -c 'bytes to clients' "$2")" -gt "$n0" ] && break
		sleep 0.01
	done
	grep 'bytes to clients' "$2" | tail -1 | sed -n 's/.* \([0-9]*\) bytes to clients.*/\1/p'
}

field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
READER=("$PY" examples/memmap_tokens.py --mode random --batch 12 --block-size 1024
	--compute-ms "$COMPUTE" --seconds "$SECS")
[ $CHECK = 1 ] && READER+=(--check "$WORK/www/train.bin")

# run LABEL DIR PROXY-PID PROXY-LOG DAEMON-PID MAXMEM: one row
run() {
	local label=$1 dir=$2 ppid=$3 plog=$4 dpid=$5 maxmem=$6 b0 b1 out rss
	b0=$(proxy_bytes "$ppid" "$plog")
	out=$("${READER[@]}" "$dir/train.bin" 2>&1) ||
		{ printf '| %-28s | failed: %s |\n' "$label" "$(tail -1 <<<"$out")"; return 0; }
	b1=$(proxy_bytes "$ppid" "$plog")
	rss=-
	[ -n "$dpid" ] && rss="$(daemon_hwm "$dpid")M"
	[ -n "$maxmem" ] && rss="$rss / $maxmem"
	printf '| %-28s | %6s | %6s | %6s | %9s | %7s | %-14s | %s |\n' "$label" \
		"$(field data_wait_pct "$out")" "$(field wait_h1_pct "$out")" \
		"$(field wait_h2_pct "$out")" "$(field samples_s "$out")" \
		"$(python3 -c "print('%.2f' % (($b1 - $b0) / $FILE_BYTES))")" "$rss" \
		"$(field mismatches "$out")"
}

# pf_notes DIR LOG: the prefetchfs stats that explain a row
pf_notes() {
	python3 - "$1/.prefetchfs/stats" "$2" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t, f = s["totals"], s.get("fill", {})
dc = s.get("transport", {}).get("disk_cache")
asked = t["bytes_served"]
line = ("    read %.0f MiB from the backend (disk hits too) for %.0f MiB of READs (%.2fx), %d READs, waits %d, fill %s %.0f/%.0f MiB"
        % (t["bytes_fetched"] / 2**20, asked / 2**20,
           t["bytes_fetched"] / asked if asked else 0, t["reads"], t["waits"],
           f.get("state", "-"), f.get("bytes_done", 0) / 2**20,
           f.get("bytes_total", 0) / 2**20))
if dc:
    line += ", disk: %.0f MiB cached, %d hits, waited %d" % (
        dc["bytes_cached"] / 2**20, dc["hits"], dc["waited"])
for a in s.get("advice", []):
    line += "\n    stats: advice: " + a
print(line)
PY
	grep -o 'advice: .*' "$2" | head -1 | sed 's/^/    log: /' || true
}

echo "# bench/tokens.sh ($(date -u '+%Y-%m-%d %H:%M'), $(bench_machine))"
echo "# $(numfmt --to=iec "$FILE_BYTES") token file; nginx behind delayproxy $LAT ms, $BW/s a connection;"
echo "# memmap_tokens.py --mode random: 12 windows of 1,025 tokens a step, $COMPUTE ms compute, $SECS s"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '| %-28s | %6s | %6s | %6s | %9s | %7s | %-14s | %s |\n' reader "wait %" "1st %" "2nd %" windows/s "fetch/f" "RSS / max" mismatches
printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' ------------------------------ -------- -------- -------- ----------- --------- ---------------- ----
run "local copy" "$WORK/www" "$PF_PROXY" "$PF_PLOG" "" ""
n=0
for spec in "${SPECS[@]}"; do
	n=$((n + 1))
	label=${spec%%=*}
	rest=${spec#*=}
	bin=${rest%%,*}
	opts=${rest#"$bin"}
	opts=${opts#,}
	opts=$(sed -E "s#(^|,)cache_dir(,|$)#\\1cache_dir=$WORK/cache.$n\\2#" <<<"$opts")
	[[ $opts == *cache_dir=* ]] && mkdir -p "$WORK/cache.$n"
	maxmem=$(sed -n 's/.*max_memory=\([^,]*\).*/\1/p' <<<"$opts")
	PF=$bin
	mnt=$WORK/m.$n
	pf_mount "$PF_URL" "$mnt" -o "log_file=$WORK/log.$n${opts:+,$opts}" >/dev/null ||
		{ echo "bench/tokens.sh: $label: mount failed" >&2; exit 1; }
	run "prefetchfs $label" "$mnt" "$PF_PROXY" "$PF_PLOG" "$(pf_pid "$mnt")" "$maxmem"
	pf_notes "$mnt" "$WORK/log.$n"
	pf_umount "$mnt"
done
if [ $RCLONE = 1 ]; then
	mkdir -p "$WORK/rc"
	track_mount "$WORK/rc"
	rclone mount :http: "$WORK/rc" --http-url "$RC_URL" --read-only \
		--vfs-cache-mode full --cache-dir "$WORK/rcache" \
		--log-file "$WORK/rclone.log" >/dev/null 2>&1 &
	rpid=$!
	track_pid $rpid
	for ((i = 0; i < 100; i++)); do
		mountpoint -q "$WORK/rc" && break
		sleep 0.1
	done
	if mountpoint -q "$WORK/rc"; then
		run "rclone --vfs-cache-mode full" "$WORK/rc" "$RC_PROXY" "$RC_PLOG" "$rpid" ""
		fusermount3 -u "$WORK/rc" 2>/dev/null || true
	else
		echo "| rclone | mount failed |"
	fi
fi
set +e
finish >/dev/null
