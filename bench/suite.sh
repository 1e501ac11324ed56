#!/bin/bash
# bench/suite.sh - prefetchfs against other ways of reading the same store,
# side by side in one run.
#
#   make && make bench && bench/suite.sh [--quick | --smoke] [options]
#
# Stores (each at every --latencies value, bandwidth printed with it):
#   slowfs  a slow directory: bench/slowfs over local files, LAT ms per
#           READ + size / --slowfs-bw MiB/s (READs served concurrently)
#   http    nginx behind bench/delayproxy: LAT ms to the first byte of
#           every response, --bw per connection
#   s3      the S3 test server (s3rver, tests/servers.sh) behind
#           bench/delayproxy, likewise
#   (before the first row the data set is written back and s3rver is
#   warmed with 256 GETs, so that no row pays for the set-up)
# Systems (one fresh mount per row):
#   local       the local files, in the page cache: the floor of each
#               shape (what the trainer costs with no store at all)
#   direct      the store without prefetching: slowfs read directly
#               (read_ahead_kb=1024), for http/s3 prefetchfs -o prefetch=off
#   prefetchfs  prefetchfs with its defaults
#   rclone      rclone mount (:http:, :s3: or the local path), defaults
#   rclone-tuned  --vfs-cache-mode full, big read-ahead, buffer and chunks
#   s3fs        s3fs (S3 only), parallel_count=8,multipart_size=8
# Workloads (bench/trainer, every run ends at a batch boundary after
# --time-limit seconds):
#   seq      batches of 8 MiB (1 MiB read()s), 40 ms compute after each
#   mmap     the same, copied out of a shared mapping
#   stride   4 processes on one file, rank r: --offset r*1M --stride 4M
#            --record 1M, batches of 2 MiB, 40 ms compute
#   workers  4 processes, each its own shard, batches of 2 MiB, 40 ms
#   readers  4 processes, each its own shard, 1 MiB read()s after
#            POSIX_FADV_SEQUENTIAL, batches of 8 MiB, 160 ms compute
#            (issue 14's shape; bench/objstore.sh runs it at 512 MiB
#            shards, 5 times)
#   scan     1 MiB read()s, no compute
#   random   256 KiB preads at random offsets, 4 per batch, 10 ms compute
# Figures per row: data wait % (time waiting for data / wall; mean over the
# processes), MB/s (all processes' bytes / the longest wall), amplification
# (bytes the store served during the run / bytes read; at slowfs: READ
# bytes, through delayproxy: response bytes with headers), daemon CPU s
# (utime+stime of the FUSE daemon at the end of the run, its whole life),
# daemon CPU s per GiB the trainers read, and peak RSS MiB (its VmHWM).  Also prefetchfs scan MB/s against -o max_inflight on the
# http and s3 stores at the highest latency.
#
# Writes OUT/suite.md, OUT/suite.tsv, OUT/suite-wait-latency.png and
# OUT/suite-inflight.png (OUT: --out, default bench/results).
#
# Options:
#   --quick           ~4 minutes: 64M files, 3 s runs, workloads seq, readers, scan
#                     and random, fewer max_inflight values
#   --smoke           about a minute: 16M files, seq workload only
#   (--quick and --smoke start the next row while a daemon still exits)
#   --size SIZE       bytes per workload file (default 256M)
#   --latencies "L.." first-byte / per-READ latencies in ms (default "5 50")
#   --bw RATE         delayproxy per-connection bandwidth (default 64M)
#   --slowfs-bw MIB   slowfs bandwidth per READ in MiB/s (default 100)
#   --time-limit S    seconds per run at most (default 6)
#   --stores "..."    subset of "slowfs http s3"
#   --systems "..."   subset of "local direct prefetchfs rclone rclone-tuned s3fs"
#   --workloads "..." subset of "seq mmap stride workers readers scan random"
#   --inflight "N.."  max_inflight values of the plot (default 1..32)
#   --out DIR         where the results go (default bench/results)
#   --no-deps         do not run tests/deps.sh first
set -euo pipefail
cd "$(dirname "$0")/.."
ARGS="$*"
SIZE=256M
LATS="5 50"
BW=64M
SLOW_BW=100
TLIMIT=6
UMOUNT_WAIT=1
STORES="slowfs http s3"
SYSTEMS="local direct prefetchfs rclone rclone-tuned s3fs"
WORKLOADS="seq mmap stride workers readers scan random"
INFLIGHT="1 2 4 8 16 32"
RAND_BATCHES=25
OUT=bench/results
DEPS=1
PRESET=default
usage_err() { echo "bench/suite.sh: $* (see --help)" >&2; exit 2; }
need_arg() { [ $# -ge 2 ] || usage_err "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) PRESET=quick; SIZE=64M; TLIMIT=3; INFLIGHT="1 4 16"
		WORKLOADS="seq readers scan random"; RAND_BATCHES=10; UMOUNT_WAIT=0
		shift ;;
	--smoke) PRESET=smoke; SIZE=16M; TLIMIT=2; INFLIGHT="1 8"
		WORKLOADS=seq; RAND_BATCHES=5; UMOUNT_WAIT=0; shift ;;
	--size) need_arg "$@"; SIZE=$2; shift 2 ;;
	--latencies) need_arg "$@"; LATS=$2; shift 2 ;;
	--bw) need_arg "$@"; BW=$2; shift 2 ;;
	--slowfs-bw) need_arg "$@"; SLOW_BW=$2; shift 2 ;;
	--time-limit) need_arg "$@"; TLIMIT=$2; shift 2 ;;
	--stores) need_arg "$@"; STORES=$2; shift 2 ;;
	--systems) need_arg "$@"; SYSTEMS=$2; shift 2 ;;
	--workloads) need_arg "$@"; WORKLOADS=$2; shift 2 ;;
	--inflight) need_arg "$@"; INFLIGHT=$2; shift 2 ;;
	--out) need_arg "$@"; OUT=$2; shift 2 ;;
	--no-deps) DEPS=0; shift ;;
	-h|--help) sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) usage_err "unknown argument '$1'" ;;
	esac
done
only_of() { # WHAT "VALUES" "ALLOWED"
	local v
	[ -n "$2" ] || usage_err "--$1 is empty"
	for v in $2; do
		[[ " $3 " == *" $v "* ]] || usage_err "--$1: unknown value '$v' (one of: $3)"
	done
}
only_of stores "$STORES" "slowfs http s3"
only_of systems "$SYSTEMS" "local direct prefetchfs rclone rclone-tuned s3fs"
only_of workloads "$WORKLOADS" "seq mmap stride workers readers scan random"
for v in $LATS $INFLIGHT $SLOW_BW; do
	[[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_err "'$v' is not a number"
done
[[ $TLIMIT =~ ^[0-9]+(\.[0-9]+)?$ ]] && [ "$TLIMIT" != 0 ] ||
	usage_err "--time-limit '$TLIMIT' is not a positive number"
[[ $SIZE =~ ^[0-9]+[KMG]?$ ]] || usage_err "--size '$SIZE' is not a size (e.g. 256M)"
[[ $BW =~ ^[0-9]+[KMG]?$ ]] || usage_err "--bw '$BW' is not a rate (e.g. 64M)"
[ -n "$LATS" ] || usage_err "--latencies is empty"

if [ "$DEPS" = 1 ]; then
	tests/deps.sh || { echo "bench/suite.sh: tests/deps.sh failed" >&2; exit 1; }
fi
for t in prefetchfs bench/slowfs bench/delayproxy bench/trainer bench/mkdata; do
	[ -x "$t" ] || { echo "bench/suite.sh: $t missing: run 'make && make bench' first" >&2; exit 1; }
done
for t in nginx rclone s3fs gnuplot node; do
	command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] ||
		{ echo "bench/suite.sh: $t missing: run tests/deps.sh" >&2; exit 1; }
done

# the test library: temporary dirs, mounts and servers always cleaned up
. tests/lib.sh
. tests/servers.sh
. bench/lib.sh
# errors are handled where they happen (a failed run is a row of the table)
set +eu
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
MAXLAT=$(printf '%s\n' $LATS | sort -g | tail -1)
export RCLONE_CONFIG=$WORK/rclone.conf
: >"$RCLONE_CONFIG"
say() { echo "[suite $(($(date +%s) - T0))s] $*" >&2; }

# ---- the dataset: one file per workload, 4 shards -------------------------
D=$WORK/data
mkdir -p "$D"
bench/mkdata --seed 1 "$WORK/gen" 5 "$SIZE" >/dev/null
i=0
for f in seq mmap stride scan random; do
	mv "$WORK/gen/file-00000$i.bin" "$D/$f.bin"
	i=$((i + 1))
done
SHARD=$(( $(stat -c %s "$D/seq.bin") / 4 ))
bench/mkdata --seed 2 "$WORK/gen" 4 "$SHARD" >/dev/null
for i in 0 1 2 3; do
	mv "$WORK/gen/file-00000$i.bin" "$D/shard-$i.bin"
done
FILEMB=$(( $(stat -c %s "$D/seq.bin") >> 20 ))
say "dataset: 5 files of $FILEMB MiB and 4 shards of $((SHARD >> 20)) MiB in $D"

# ---- servers ---------------------------------------------------------------
NGINX_UP=""
S3_UP=""
if [[ " $STORES " == *" http "* ]]; then
	nginx_start "$D" >/dev/null || { echo "bench/suite.sh: nginx did not start" >&2; exit 1; }
	NGINX_UP=${NGINX_URL#http://}
	NGINX_UP=${NGINX_UP%/}
fi
if [[ " $STORES " == *" s3 "* ]]; then
	s3_start bkt >/dev/null || { echo "bench/suite.sh: the S3 server did not start" >&2; exit 1; }
	s3_put_tree bkt ds/ "$D" || exit 1
	S3_UP=127.0.0.1:$S3_PORT
	printf '%s:%s\n' "$S3_KEY" "$S3_SECRET" >"$WORK/s3fs.passwd"
	chmod 600 "$WORK/s3fs.passwd"
fi
# The first row must not pay for the set-up, or whichever system comes
# first loses: the data set and the S3 server's copy of it are 10 GiB and
# more of dirty pages at the default --size, written back 30 s later, in
# the first rows; and node compiles s3rver's GET path in its first few
# hundred requests.  So: write back now, and warm the S3 server with 256
# ranged GETs straight to it (not through delayproxy: counted nowhere).
say "writing back the data set"
sync
if [ -n "$S3_UP" ]; then
	warm=()
	for _ in $(seq 256); do
		warm+=(-o /dev/null "$S3_ENDPOINT/bkt/ds/random.bin")
	done
	s3_curl --parallel --parallel-max 16 -r 0-1048575 "${warm[@]}" ||
		{ echo "bench/suite.sh: the S3 server does not serve its objects" >&2; exit 1; }
fi

# spawn PIDFILE LOG CMD...: CMD in the background, not a job of this shell
# (lib.sh's cleanup stops jobs before the unmounts), output to LOG
spawn() {
	local pidf=$1 log=$2
	shift 2
	( "$@" </dev/null >"$log" 2>&1 &
	  echo $! >"$pidf" )
	cat "$pidf"
}

# wait_mount MNT PID: true once MNT is mounted (15 s at most, or PID exits)
wait_mount() {
	local i
	for ((i = 0; i < 300; i++)); do
		mountpoint -q "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# ---- stores ----------------------------------------------------------------
# store_up KIND LAT: sets SRC (path or URL), CPID and CLOG (the process
# counting the store's bytes and its log), STORE_DESC
store_up() {
	local kind=$1 lat=$2 up pid
	case $kind in
	slowfs)
		SRC=$WORK/slow.$lat
		mkdir -p "$SRC"
		MOUNTS+=("$SRC")
		CLOG=$WORK/slowfs.$lat.log
		CPID=$(spawn "$WORK/slowfs.$lat.pid" "$CLOG" bench/slowfs -f \
			-o "latency_ms=$lat,bw_mib=$SLOW_BW" "$D" "$SRC")
		DAEMON_PIDS+=("$CPID")
		wait_mount "$SRC" "$CPID" || { cat "$CLOG"; return 1; }
		echo 1024 >"/sys/class/bdi/$(mountpoint -d "$SRC")/read_ahead_kb"
		STORE_DESC="bench/slowfs: $lat ms per READ + size / $SLOW_BW MiB/s per READ"
		;;
	http|s3)
		[ "$kind" = http ] && up=$NGINX_UP || up=$S3_UP
		delayproxy_start "$up" "$lat" "$BW" >/dev/null || return 1
		CPID=$DELAY_PID
		CLOG=$DELAY_DIR/log
		if [ "$kind" = http ]; then
			SRC=$DELAY_URL/
			STORE_DESC="nginx"
		else
			SRC=$DELAY_URL
			STORE_DESC="s3rver"
		fi
		STORE_DESC="$STORE_DESC behind $DELAY_DESC"
		;;
	esac
}

store_down() { # KIND LAT
	if [ "$1" = slowfs ]; then
		fusermount3 -u "$SRC" && wait_gone "$CPID" 100
	else
		kill "$CPID" && wait_gone "$CPID" 50
	fi
}

# store_bytes: bytes the store has served so far (the counter's SIGUSR1
# line; slowfs: READ bytes, delayproxy: bytes to clients)
store_bytes() {
	local pat n0 i
	if [ "$KIND" = slowfs ]; then pat='slowfs: totals:'; else pat='bytes to clients'; fi
	n0=$(grep -c "$pat" "$CLOG")
	kill -USR1 "$CPID"
	for ((i = 0; i < 200; i++)); do
		[ "$(grep -c "$pat" "$CLOG")" -gt "$n0" ] && break
		sleep 0.01
	done
	if [ "$KIND" = slowfs ]; then
		grep "$pat" "$CLOG" | tail -1 | sed -n 's/.* bytes=\([0-9]*\).*/\1/p'
	else
		grep "$pat" "$CLOG" | tail -1 | sed -n 's/.* \([0-9]*\) bytes to clients.*/\1/p'
	fi
}

# ---- systems ---------------------------------------------------------------
RCLONE_TUNED="--vfs-cache-mode full --vfs-read-ahead 256M --buffer-size 64M --vfs-read-chunk-size 8M --vfs-read-chunk-size-limit 256M --max-read-ahead 1M"
S3FS_TUNED="parallel_count=8,multipart_size=8"
# sys_mount SYS MNT [extra prefetchfs options]: mount SYS over the current
# store on MNT; sets DPID (the FUSE daemon; empty for direct slowfs) and
# RMNT (where the files are).  On failure returns 1 with WHY set.
sys_mount() {
	local sys=$1 mnt=$2 extra=${3:-} log pid
	WHY=""
	DPID=""
	RMNT=$mnt
	log=$WORK/daemon.$(basename "$mnt").log
	mkdir -p "$mnt"
	case $sys in
	local)
		RMNT=$D
		return 0
		;;
	direct|prefetchfs)
		if [ "$sys" = direct ] && [ "$KIND" = slowfs ]; then
			RMNT=$SRC
			return 0
		fi
		local o=""
		[ "$sys" = direct ] && o=prefetch=off
		[ -n "$extra" ] && o=${o:+$o,}$extra
		if [ "$KIND" = s3 ]; then
			AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET \
				pf_mount s3://bkt/ds/ "$mnt" -o "endpoint=$SRC${o:+,$o}" >"$log.err" 2>&1
		else
			pf_mount "$SRC" "$mnt" ${o:+-o "$o"} >"$log.err" 2>&1
		fi || { WHY="mount failed: $(grep -m1 . "$log.err" "$log" 2>/dev/null | cut -c1-120)"; return 1; }
		DPID=$(pf_pid "$mnt")
		return 0
		;;
	rclone|rclone-tuned)
		local remote args=(--read-only --cache-dir "$WORK/rcache.$(basename "$mnt")"
			--log-file "$log" --log-level NOTICE)
		case $KIND in
		slowfs) remote=$SRC ;;
		http) remote=:http:; args+=(--http-url "$SRC") ;;
		s3) remote=:s3:bkt/ds
			args+=(--s3-provider Other --s3-endpoint "$SRC" --s3-region us-east-1
				--s3-access-key-id "$S3_KEY" --s3-secret-access-key "$S3_SECRET") ;;
		esac
		[ "$sys" = rclone-tuned ] && args+=($RCLONE_TUNED)
		MOUNTS+=("$mnt")
		# (AWS_CA_BUNDLE, which some machines set, makes rclone's S3
		# client refuse its own HTTP transport)
		pid=$(spawn "$WORK/pid.$(basename "$mnt")" "$log.out" \
			env -u AWS_CA_BUNDLE rclone mount "$remote" "$mnt" "${args[@]}")
		;;
	s3fs)
		if [ "$KIND" != s3 ]; then
			WHY="n/a: s3fs reads only S3"
			return 1
		fi
		MOUNTS+=("$mnt")
		pid=$(spawn "$WORK/pid.$(basename "$mnt")" "$log" s3fs bkt:/ds "$mnt" -f \
			-o "url=$SRC,use_path_request_style,passwd_file=$WORK/s3fs.passwd,ro,endpoint=us-east-1,$S3FS_TUNED,dbglevel=err")
		;;
	esac
	DAEMON_PIDS+=("$pid")
	if ! wait_mount "$mnt" "$pid"; then
		WHY="mount failed: $(sys_error "$log" "$log.out")"
		kill "$pid" 2>/dev/null
		wait_gone "$pid" 50 || kill -9 "$pid" 2>/dev/null
		return 1
	fi
	DPID=$pid
	# the mount answers once its root can be listed
	for _ in $(seq 100); do
		ls "$mnt" >/dev/null 2>&1 && [ -e "$mnt/seq.bin" ] && return 0
		sleep 0.1
	done
	WHY="mounted, but seq.bin is not there: $(sys_error "$log" "$log.out")"
	sys_umount "$mnt"
	return 1
}

# sys_error LOG...: the first error of a daemon's logs, short
sys_error() {
	local f line code
	for f in "$@"; do
		[ -f "$f" ] || continue
		code=$(grep -ao '<Code>[^<]*' "$f" | head -1 | sed 's/<Code>//')
		line=$(grep -aE -m1 '\[(CRT|ERR)\]|ERROR|Failed|failed|error' "$f" |
			sed 's/^[0-9TZ:.\/ -]*//' | cut -c1-110)
		if [ -n "$code" ]; then
			echo "$(grep -ao 'HTTP response code [0-9]*' "$f" | head -1) $code"
			return
		fi
		[ -n "$line" ] && { echo "$line"; return; }
	done
	echo "no error logged"
}

sys_umount() { # MNT
	local p
	mountpoint -q "$1" || return 0
	if [ -n "$DPID" ]; then p=$DPID; else p=$(mount_daemon_pid "$1"); fi
	fusermount3 -u "$1" 2>/dev/null || { sleep 0.5; fusermount3 -u "$1"; } || return 1
	[ "$UMOUNT_WAIT" = 1 ] || return 0
	if [ -n "$p" ] && ! wait_gone "$p" 100; then
		ours "$p" && kill -9 "$p" 2>/dev/null
	fi
	return 0
}

# ---- workloads -------------------------------------------------------------
# workload WL DIR: run it, one trainer line per process into $WORK/wl.N;
# false (reason in WHY) if a trainer failed
workload() {
	local wl=$1 dir=$2 tr pids=() r rc=0 lim
	tr=(timeout -k 5 $((${TLIMIT%.*} * 3 + 60)) bench/trainer --time-limit "$TLIMIT")
	rm -f "$WORK"/wl.*
	case $wl in
	seq) "${tr[@]}" --batch 8M --compute-ms 40 "$dir/seq.bin" >"$WORK/wl.0" 2>"$WORK/wl.err.0" || rc=$? ;;
	mmap) "${tr[@]}" --mode mmap --batch 8M --compute-ms 40 "$dir/mmap.bin" >"$WORK/wl.0" 2>"$WORK/wl.err.0" || rc=$? ;;
	scan) "${tr[@]}" --scan "$dir/scan.bin" >"$WORK/wl.0" 2>"$WORK/wl.err.0" || rc=$? ;;
	random) "${tr[@]}" --random 1 --read-size 256K --batch 1M --compute-ms 10 \
		--batches "$RAND_BATCHES" "$dir/random.bin" >"$WORK/wl.0" 2>"$WORK/wl.err.0" || rc=$? ;;
	stride|workers|readers)
		for r in 0 1 2 3; do
			if [ "$wl" = stride ]; then
				"${tr[@]}" --batch 2M --compute-ms 40 --record 1M --stride 4M \
					--offset "${r}M" "$dir/stride.bin" >"$WORK/wl.$r" 2>"$WORK/wl.err.$r" &
			elif [ "$wl" = readers ]; then
				"${tr[@]}" --fadvise sequential --batch 8M --compute-ms 160 \
					"$dir/shard-$r.bin" >"$WORK/wl.$r" 2>"$WORK/wl.err.$r" &
			else
				"${tr[@]}" --batch 2M --compute-ms 40 "$dir/shard-$r.bin" \
					>"$WORK/wl.$r" 2>"$WORK/wl.err.$r" &
			fi
			pids+=($!)
		done
		for r in "${pids[@]}"; do
			wait "$r" || rc=$?
		done
		;;
	esac
	if [ $rc -ne 0 ]; then
		WHY="trainer failed (exit $rc): $(cat "$WORK"/wl.err.* | grep -m1 . | cut -c1-100)"
		[ $rc = 124 ] && WHY="trainer hung, killed after $((${TLIMIT%.*} * 3 + 60)) s"
		return 1
	fi
	return 0
}

# aggregate: "bytes wall_s wait_pct mb_s limited" over the trainer lines
aggregate() {
	python3 - "$WORK"/wl.[0-9] <<'PY'
import sys
rows = []
for f in sys.argv[1:]:
    kv = dict(t.split("=", 1) for t in open(f).read().split() if "=" in t)
    rows.append(kv)
b = sum(int(r["bytes"]) for r in rows)
wall = max(float(r["wall_s"]) for r in rows)
wait = sum(float(r["data_wait_pct"]) for r in rows) / len(rows)
lim = max(int(r.get("limited", 0)) for r in rows)
print(b, "%.3f" % wall, "%.1f" % wait, "%.1f" % (b / wall / 1e6 if wall else 0), lim)
PY
}

# ---- the matrix ------------------------------------------------------------
TSV=$WORK/suite.tsv
printf 'store\tlatency_ms\tsystem\tworkload\twait_pct\tmb_s\tamplification\tcpu_s\trss_mib\tbytes\tstore_bytes\tlimited\tnote\tcpu_s_per_gib\n' >"$TSV"
printf 'store\tmax_inflight\tmb_s\tamplification\n' >"$WORK/inflight.tsv"
: >"$WORK/stores.txt"
NROWS=0
for k in $STORES; do
	for s in $SYSTEMS; do
		for w in $WORKLOADS; do NROWS=$((NROWS + $(echo $LATS | wc -w))); done
	done
	[ "$k" != slowfs ] && [[ " $SYSTEMS " == *" prefetchfs "* ]] &&
		NROWS=$((NROWS + $(echo $INFLIGHT | wc -w)))
done
ROW=0
row() { # SYS WL [prefetchfs options]: mount, run, measure, unmount
	local sys=$1 wl=$2 extra=${3:-} mnt res b0 b1 amp cpu="-" rss="-" note="" gib="-"
	local bytes="" wall wait mbs lim
	ROW=$((ROW + 1))
	mnt=$WORK/m.$KIND.$LAT.$sys.$wl${extra:+.${extra//[=,]/_}}
	WHY=""
	if [ -n "${MOUNT_FAIL[$sys]:-}" ]; then
		note=${MOUNT_FAIL[$sys]}
	elif ! sys_mount "$sys" "$mnt" "$extra"; then
		note=$WHY
		MOUNT_FAIL[$sys]=$WHY
	else
		b0=$(store_bytes)
		if workload "$wl" "$RMNT"; then
			res=$(aggregate)
			read -r bytes wall wait mbs lim <<<"$res"
			sleep 0.3	# fetches still in flight count too
			b1=$(store_bytes)
			amp=$(python3 -c "print('%.2f' % (($b1 - $b0) / $bytes) if $bytes else '-')")
			[ "$sys" = local ] && amp=-
			[ "$lim" = 1 ] && note="stopped after ${TLIMIT} s"
		else
			note=$WHY
		fi
		if [ -n "$DPID" ]; then
			cpu=$(daemon_cpu "$DPID")
			rss=$(daemon_hwm "$DPID")
			[ -n "$bytes" ] && [ -n "$cpu" ] && [ "$bytes" -gt 0 ] &&
				gib=$(python3 -c "print('%.2f' % ($cpu / ($bytes / 2**30)))")
		fi
		sys_umount "$mnt" || note="${note:+$note; }unmount failed"
	fi
	if [ -n "$bytes" ]; then
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$KIND" "$LAT" \
			"$sys${extra:+ -o $extra}" "$wl" "$wait" "$mbs" "$amp" "${cpu:--}" "${rss:--}" \
			"$bytes" "$((b1 - b0))" "$lim" "$note" "$gib" >>"$ROWTSV"
		say "[$ROW/$NROWS] $KIND ${LAT}ms $sys${extra:+ -o $extra} $wl: wait ${wait}% ${mbs} MB/s amp $amp cpu ${cpu:--}s (${gib}s/GiB) rss ${rss:--}MiB${note:+ ($note)}"
	else
		printf '%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t-\n' "$KIND" "$LAT" \
			"$sys" "$wl" "$note" >>"$ROWTSV"
		say "[$ROW/$NROWS] $KIND ${LAT}ms $sys $wl: $note"
	fi
}

declare -A MOUNT_FAIL
for KIND in $STORES; do
	for LAT in $LATS; do
		store_up "$KIND" "$LAT" || { echo "bench/suite.sh: the $KIND store at $LAT ms did not come up" >&2; exit 1; }
		echo "$KIND	$LAT	$STORE_DESC" >>"$WORK/stores.txt"
		say "store $KIND: $STORE_DESC"
		MOUNT_FAIL=()
		ROWTSV=$TSV
		for sys in $SYSTEMS; do
			for wl in $WORKLOADS; do
				row "$sys" "$wl"
			done
		done
		if [ "$LAT" = "$MAXLAT" ] && [ "$KIND" != slowfs ] &&
		   [[ " $SYSTEMS " == *" prefetchfs "* ]]; then
			ROWTSV=$WORK/inflight.rows
			for n in $INFLIGHT; do
				row prefetchfs scan "max_inflight=$n"
			done
		fi
		store_down "$KIND" "$LAT"
	done
done
[ -f "$WORK/inflight.rows" ] && awk -F'\t' '{ n = $3; sub(/.*max_inflight=/, "", n);
	print $1 "\t" n "\t" $6 "\t" $7 }' "$WORK/inflight.rows" >>"$WORK/inflight.tsv"

# ---- report ----------------------------------------------------------------
cp "$TSV" "$OUT/suite.tsv"
cp "$WORK/inflight.tsv" "$OUT/suite-inflight.tsv"
CMD="bench/suite.sh${ARGS:+ $ARGS}"
python3 - "$TSV" "$WORK/inflight.tsv" "$WORK/stores.txt" "$OUT" "$WORK/plot" <<PY
import collections, os, sys
tsv, inflight, stores_txt, out, plot = sys.argv[1:]
os.makedirs(plot, exist_ok=True)
rows = [l.rstrip("\n").split("\t") for l in open(tsv)][1:]
inf = [l.rstrip("\n").split("\t") for l in open(inflight)][1:]
stores = [l.rstrip("\n").split("\t") for l in open(stores_txt)]
names = {"slowfs": "slow directory", "http": "HTTP", "s3": "S3"}
wlname = {"seq": "seq batches", "mmap": "mmap batches", "stride": "4 strided ranks",
          "workers": "4 workers, shards", "readers": "4 readers, 160 ms", "scan": "scan", "random": "random 256K"}
o = []
o.append("# prefetchfs comparative benchmark (%s, %s)" % ("$(date -u +%Y-%m-%d)", "$(bench_machine)"))
o.append("")
o.append("Command: \`$CMD\` ($PRESET preset: files of $SIZE, runs of at most $TLIMIT s)")
o.append("")
o.append("Stores:")
o.append("")
for k, lat, desc in stores:
    o.append("- %s, %s ms: %s" % (names[k], lat, desc))
o.append("")
o.append("Workloads (bench/trainer): seq = batches of 8 MiB read with 1 MiB read()s, 40 ms compute "
         "after each; mmap = the same copied out of a mapping; 4 strided ranks = 4 processes on one "
         "file, rank r reads 1 MiB records at r MiB + 4i MiB, batches of 2 MiB, 40 ms; 4 workers = "
         "4 processes each on its own shard, batches of 2 MiB, 40 ms; 4 readers, 160 ms = 4 processes "
         "each on its own shard, 1 MiB read()s after POSIX_FADV_SEQUENTIAL, batches of 8 MiB, 160 ms; scan = 1 MiB read()s, no "
         "compute; random = 256 KiB preads at random offsets, 4 per batch, 10 ms compute.")
o.append("")
o.append("Systems: local = the files on local disk, in the page cache (the floor of each "
         "shape: no store, no FUSE); direct = the store without prefetching: slowfs read directly (read_ahead_kb=1024), "
         "or prefetchfs -o prefetch=off for HTTP/S3; prefetchfs = its defaults; rclone = "
         "\`rclone mount --read-only\` of the slowfs path, an :http: remote or an :s3: remote "
         "(provider Other), $(rclone version 2>/dev/null | head -1 | sed 's/^rclone //'); "
         "rclone-tuned = the same with \`$RCLONE_TUNED\`; s3fs = "
         "\`s3fs -o use_path_request_style,ro,$S3FS_TUNED\` ($(s3fs --version 2>/dev/null | head -1 | sed 's/^Amazon Simple Storage Service File System //')).")
o.append("")
o.append("wait % = time waiting for data / wall (mean over processes); MB/s = bytes read by all "
         "processes / longest wall; amp = bytes the store served during the run (slowfs READ bytes; "
         "delayproxy response bytes, headers included) / bytes read, so read-ahead still in flight "
         "when a time-limited run stops counts; CPU s = utime+stime of the FUSE daemon at the end of "
         "the run (from its mount); s/GiB = that CPU per GiB the trainers read; RSS = its peak (VmHWM). An amp below 1: a chunk read twice "
         "(random reads are drawn with replacement) came from the kernel's page cache the second time. "
         "Rows of one run were measured on the same machine minutes apart; compare within a run only.")
for k, lat, desc in stores:
    o.append("")
    o.append("## %s, %s ms" % (names[k], lat))
    o.append("")
    o.append("| workload | system | wait % | MB/s | amp | CPU s | s/GiB | RSS MiB | note |")
    o.append("|---|---|---:|---:|---:|---:|---:|---:|---|")
    sel = [r for r in rows if r[0] == k and r[1] == lat]
    order = list(dict.fromkeys(r[3] for r in sel))
    for w in order:
        for r in sel:
            if r[3] == w:
                o.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (wlname[w], r[2], r[4], r[5], r[6], r[7], r[13] if len(r) > 13 else "-", r[8], r[12]))
if inf:
    o.append("")
    o.append("## prefetchfs scan vs -o max_inflight (%s ms)" % "$MAXLAT")
    o.append("")
    ks = list(dict.fromkeys(r[0] for r in inf))
    o.append("| max_inflight | " + " | ".join("%s MB/s (amp)" % names[k] for k in ks) + " |")
    o.append("|---:|" + "---:|" * len(ks))
    for n in dict.fromkeys(r[1] for r in inf):
        cells = []
        for k in ks:
            m = [r for r in inf if r[0] == k and r[1] == n]
            cells.append("%s (%s)" % (m[0][2], m[0][3]) if m else "-")
        o.append("| %s | %s |" % (n, " | ".join(cells)))
if any(r[2] == "s3fs" and "SignatureDoesNotMatch" in r[12] for r in rows):
    o.append("")
    o.append("s3fs against the S3 test server: s3rver answers s3fs's bucket requests (GET /bkt/, the "
             "mount's check and its listings) with 403 SignatureDoesNotMatch: s3rver signs the "
             "canonical URI of a bucket request as /bkt, s3fs as /bkt/ (its log, dbglevel=err, shows "
             "both string-to-signs). rclone and prefetchfs work against it.")
o.append("")
o.append("Plots: suite-wait-latency.png (data wait of the seq workload against the store latency, "
         "one line per system), suite-inflight.png (prefetchfs scan MB/s against -o max_inflight).")
open(os.path.join(out, "suite.md"), "w").write("\n".join(o) + "\n")

# gnuplot data: per store, one block per system ("title" line, then x y)
for k in dict.fromkeys(r[0] for r in rows):
    with open(os.path.join(plot, "wait-%s.dat" % k), "w") as f:
        for s in dict.fromkeys(r[2] for r in rows if r[0] == k):
            pts = [(float(r[1]), r[4]) for r in rows if r[0] == k and r[2] == s and r[3] == "seq" and r[4] != "-"]
            if not pts:
                continue
            f.write('"%s" "x"\n' % s)
            for x, y in sorted(pts):
                f.write("%g %s\n" % (x, y))
            f.write("\n\n")
nb = {}
for k in dict.fromkeys(r[0] for r in rows):
    nb[k] = len([s for s in dict.fromkeys(r[2] for r in rows if r[0] == k)
                 if any(r[0] == k and r[2] == s and r[3] == "seq" and r[4] != "-" for r in rows)])
nb["inflight"] = len(set(r[0] for r in inf if r[2] != "-"))
with open(os.path.join(plot, "blocks.gp"), "w") as f:
    for k, v in nb.items():
        f.write("nb_%s = %d\n" % (k, v))
with open(os.path.join(plot, "inflight.dat"), "w") as f:
    for k in dict.fromkeys(r[0] for r in inf):
        pts = [r for r in inf if r[0] == k and r[2] != "-"]
        if not pts:
            continue
        f.write('"%s, %s ms" "x"\n' % (names[k], "$MAXLAT"))
        for r in pts:
            f.write("%s %s\n" % (r[1], r[2]))
        f.write("\n\n")
PY
gnuplot -e "plotdir='$WORK/plot'; out='$OUT'; stores='$STORES'" bench/suite.gp ||
	{ echo "bench/suite.sh: gnuplot failed" >&2; exit 1; }
cat "$OUT/suite.md"
say "written: $OUT/suite.md, suite.tsv, suite-wait-latency.png, suite-inflight.png"
finish >/dev/null
