#!/bin/bash
# bench/ab.sh - builds of prefetchfs alternated on issue 14's four readers.
#
#   make bench && bench/ab.sh [--compute-ms 160] [--shard-size 512M]
#                             [--rounds 3] [--latency-ms 50] [--bw 64M]
#                             [--loads "trainer fio"]
#                             LABEL=BINARY[,OPTIONS] ...
#
#   bench/ab.sh --rounds 5 old=/tmp/prefetchfs.old new=./prefetchfs
#   bench/ab.sh dflt=./prefetchfs dio=./prefetchfs,direct_io=on
#
# These machines drift by 30% from one hour to the next, so two builds
# (or two option sets) are compared in one run, taking turns: every round
# reads the local page-cached shards first (the floor, the same trainer)
# and then mounts each LABEL in the order given, on a fresh mount, from
# the same store: nginx behind bench/delayproxy (--latency-ms before the
# first byte of every response, --bw per connection).  The readers are
# bench/objstore.sh's third part: four bench/trainer processes started
# together, each on its own --shard-size shard, 1 MiB read()s after
# POSIX_FADV_SEQUENTIAL, 8 MiB batches, --compute-ms after each.
#
# --loads adds the same four readers as fio jobs (fio, psync 1 MiB
# read()s, thinktime --compute-ms every 8 MiB, the load other FUSE
# mounts' benchmarks use; data wait from examples/fio/datawait.py), each
# on a fresh mount after the trainer's: rows LABEL/fio.  Both loads read
# the same bytes the same way, so their CPU per GiB must agree.
# Each row: the four readers' mean data wait % (and each one's), the
# points above that round's floor, open and first-batch ms, the batch
# wait p50 / p90 ms, the daemon's CPU seconds per GiB delivered (from
# after the mount to the readers' end) and its peak RSS (VmHWM).  The
# summary gives min / median / max of each label over the rounds.
# OPTIONS are -o options for that mount (commas inside them as in -o).
set -euo pipefail
cd "$(dirname "$0")/.."
COMPUTE=160
SHARD=512M
ROUNDS=3
LAT=50
BW=64M
LOADS=trainer
SPECS=()
while [ $# -gt 0 ]; do
	case $1 in
	--compute-ms) COMPUTE=$2; shift 2 ;;
	--shard-size) SHARD=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--latency-ms) LAT=$2; shift 2 ;;
	--bw) BW=$2; shift 2 ;;
	--loads) LOADS=$2; shift 2 ;;
	-h|--help) sed -n '2,/^# OPTIONS are/p' "$0"; exit 0 ;;
	-*) echo "bench/ab.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	*=*) SPECS+=("$1"); shift ;;
	*) echo "bench/ab.sh: '$1' is not LABEL=BINARY[,OPTIONS] (see --help)" >&2; exit 2 ;;
	esac
done
[ ${#SPECS[@]} -gt 0 ] || { echo "bench/ab.sh: no LABEL=BINARY given (see --help)" >&2; exit 2; }
for spec in "${SPECS[@]}"; do
	rest=${spec#*=}
	bin=${rest%%,*}
	[ -x "$bin" ] || { echo "bench/ab.sh: $spec: '$bin' is not an executable" >&2; exit 2; }
done
for t in bench/delayproxy bench/trainer bench/mkdata; do
	[ -x "$t" ] || { echo "bench/ab.sh: $t missing: run 'make bench' first" >&2; exit 1; }
done
command -v nginx >/dev/null || { echo "bench/ab.sh: nginx missing: run tests/deps.sh" >&2; exit 1; }
for load in $LOADS; do
	case $load in
	trainer) ;;
	fio) command -v fio >/dev/null || { echo "bench/ab.sh: fio missing: run tests/deps.sh" >&2; exit 1; } ;;
	*) echo "bench/ab.sh: --loads: '$load' is not trainer or fio" >&2; exit 2 ;;
	esac
done

# temporary dirs, mounts and servers that are always cleaned up
. tests/lib.sh
. tests/servers.sh
. bench/lib.sh
set +u
mkdir -p "$WORK/www/shards"
bench/mkdata --seed 7 "$WORK/gen" 4 "$SHARD" >/dev/null
for i in 0 1 2 3; do mv "$WORK/gen/file-00000$i.bin" "$WORK/www/shards/shard-$i.bin"; done
GIB=$(python3 -c "print(4 * $(stat -c %s "$WORK/www/shards/shard-0.bin") / 2**30)")
nginx_start "$WORK/www" >/dev/null
UP=${NGINX_URL#http://}
delayproxy_start "${UP%/}" "$LAT" "$BW" >/dev/null || { echo "bench/ab.sh: delayproxy did not start" >&2; exit 1; }
URL=$DELAY_URL/

# readers DIR: the four readers over DIR/shards; prints
# "WAIT W0 W1 W2 W3 OPEN FIRST P50 P90" (ms, each a/b/c/d)
readers() {
	local r pids=()
	for r in 0 1 2 3; do
		bench/trainer --fadvise sequential --batch 8M --read-size 1M \
			--compute-ms "$COMPUTE" "$1/shards/shard-$r.bin" >"$WORK/rd.$r" &
		pids+=($!)
	done
	for r in "${pids[@]}"; do
		wait "$r" && continue
		echo "bench/ab.sh: a reader over $1 failed; the readers said:" >&2
		cat "$WORK"/rd.[0-3] >&2
		return 1
	done
	python3 - "$WORK"/rd.[0-3] <<'PY'
import sys
rows = [dict(t.split("=", 1) for t in open(f).read().split() if "=" in t)
        for f in sys.argv[1:]]
w = [float(r["data_wait_pct"]) for r in rows]
col = lambda k, s, fmt: "/".join(fmt % (float(r[k]) * s) for r in rows)
print("%.2f" % (sum(w) / 4), " ".join("%.1f" % x for x in w),
      col("open_s", 1000, "%.0f"), col("first_batch_ms", 1, "%.0f"),
      col("batch_wait_p50_ms", 1, "%.2f"), col("batch_wait_p90_ms", 1, "%.1f"))
PY
}

# readers_fio DIR: the same four readers as fio jobs; prints
# "WAIT W0 W1 W2 W3 - - - -"
readers_fio() {
	cat >"$WORK/ab.fio" <<FIO
[global]
ioengine=psync
rw=read
bs=1M
thinktime=${COMPUTE}ms
thinktime_blocks=8
[shards]
numjobs=4
filename_format=shard-\$jobnum.bin
FIO
	if ! fio --readonly --output-format=json --directory="$1/shards" \
		"$WORK/ab.fio" >"$WORK/fio.json" 2>"$WORK/fio.err" ||
	   ! /usr/bin/python3 examples/fio/datawait.py "$WORK/fio.json" >"$WORK/fio.rows"; then
		echo "bench/ab.sh: fio over $1 failed:" >&2
		cat "$WORK/fio.err" "$WORK/fio.rows" >&2
		return 1
	fi
	python3 - "$WORK/fio.rows" <<'PY'
import sys
rows = [dict(t.split("=", 1) for t in l.split() if "=" in t) for l in open(sys.argv[1])]
w = [float(r["data_wait_pct"]) for r in rows]
print("%.2f" % (sum(w) / len(w)), " ".join("%.1f" % x for x in w), "- - - -")
PY
}

echo "# bench/ab.sh ($(date -u '+%Y-%m-%d %H:%M'), $(bench_machine))"
echo "# four readers x $SHARD, 8 MiB batches, $COMPUTE ms compute; nginx behind delayproxy $LAT ms, $BW/s a connection"
printf '%-5s %-10s %6s %6s  %-19s %-15s %-15s %-23s %-19s %6s %4s\n' \
	round label wait points each open_ms first_ms batch_p50_ms batch_p90_ms "s/GiB" RSS
: >"$WORK/rows"
for round in $(seq "$ROUNDS"); do
	cat "$WORK"/www/shards/* >/dev/null
	read -r fw a b c d open first p50 p90 < <(readers "$WORK/www")
	printf '%-5s %-10s %6s %6s  %-19s %-15s %-15s %-23s %-19s %6s %4s\n' \
		"$round" floor "$fw" - "$a $b $c $d" "$open" "$first" "$p50" "$p90" - -
	for row in $(for load in $LOADS; do for i in "${!SPECS[@]}"; do echo "$load:$i"; done; done); do
		load=${row%%:*}
		spec=${SPECS[${row#*:}]}
		label=${spec%%=*}
		[ "$load" = trainer ] || label="$label/$load"
		rest=${spec#*=}
		bin=${rest%%,*}
		opts=${rest#"$bin"}
		opts=${opts#,}
		PF=$bin
		pf_mount "$URL" "$WORK/m" ${opts:+-o "$opts"} || { echo "bench/ab.sh: $label: mount failed" >&2; exit 1; }
		pid=$(pf_pid "$WORK/m")
		t0=$(daemon_cpu "$pid")
		if [ "$load" = fio ]; then
			read -r w a b c d open first p50 p90 < <(readers_fio "$WORK/m")
		else
			read -r w a b c d open first p50 p90 < <(readers "$WORK/m")
		fi
		cpu=$(python3 -c "print('%.2f' % (($(daemon_cpu "$pid") - $t0) / $GIB))")
		rss=$(daemon_hwm "$pid")
		pf_umount "$WORK/m"
		pts=$(python3 -c "print('%.2f' % ($w - $fw))")
		printf '%-5s %-10s %6s %6s  %-19s %-15s %-15s %-23s %-19s %6s %4s\n' \
			"$round" "$label" "$w" "$pts" "$a $b $c $d" "$open" "$first" "$p50" "$p90" "$cpu" "$rss"
		echo "$label $w $pts $cpu $rss" >>"$WORK/rows"
	done
	echo "floor $fw 0 0 0" >>"$WORK/rows"
done
echo
echo "# min / median / max over $ROUNDS rounds"
python3 - "$WORK/rows" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    label, *v = line.split()
    rows.setdefault(label, []).append([float(x) for x in v])
def mmm(xs):
    return "%.2f / %.2f / %.2f" % (min(xs), statistics.median(xs), max(xs))
print("%-10s %-22s %-22s %-22s %s" % ("label", "wait %", "points above floor", "daemon s/GiB", "RSS MiB"))
for label, v in rows.items():
    if label == "floor":
        print("%-10s %-22s" % (label, mmm([x[0] for x in v])))
        continue
    print("%-10s %-22s %-22s %-22s %s" % (label, mmm([x[0] for x in v]), mmm([x[1] for x in v]),
          mmm([x[2] for x in v]), "%.0f-%.0f" % (min(x[3] for x in v), max(x[3] for x in v))))
PY
set +e
finish >/dev/null
