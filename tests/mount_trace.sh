#!/bin/bash
# -o trace=FILE: the daemon writes a Chrome Trace Event Format JSON file of
# its read path.  The source is bench/slowfs (2 ms per READ) so that
# read-ahead and waits happen:
#  - a trainer (4 MiB batches, 20 ms compute) on a traced mount: after the
#    unmount the file parses (python3's json), holds fetch events, READ
#    events, refills, counters, tracks named after the streams, every
#    track's events in time order and not overlapping, and the READs and
#    waits the stats file counted;
#  - four readers at once (two per file): the same, and the READs in the
#    trace are the ones the stats counted;
#  - a bad trace path (a missing directory, a directory): the mount fails
#    with one "prefetchfs:" line, nothing is mounted;
#  - trace_seconds=1: after a second the file is finished while the mount
#    goes on (complete JSON, every ts <= 1 s), and the unmount leaves it;
#  - SIGTERM in the middle of a traced load: the file is complete JSON.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$SLOWFS" "$TRAINER" "$MKDATA"

DATA=$WORK/data
SLOW=$WORK/slow
F0=file-000000.bin
F1=file-000001.bin
"$MKDATA" "$DATA" 2 32M >/dev/null 2>&1 || fail "bench/mkdata"
slowfs_mount "$DATA" "$SLOW" -o latency_ms=2 || { fail "slowfs mount"; finish; }

cat >"$WORK/tcheck.py" <<'PY'
# tcheck.py check|eval TRACE EXPR: EXPR is true of the trace TRACE (check)
# or its value is printed (eval), where
#   d the document, ev its events, names {tid: track name}, other otherData,
#   fetches / reads / waits / hits / refills / pushes / counters: events,
#   nreads: READs the read events stand for, order_ok / overlap_ok: every
#   track's events are in time order / its X events do not overlap
# (the stats side of a comparison is lib.sh's stats_check)
import json, re, sys
mode = sys.argv[1]
del sys.argv[1]
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
other = d.get("otherData", {})
names = {e["tid"]: e["args"]["name"] for e in ev
         if e["ph"] == "M" and e["name"] == "thread_name"}
X = [e for e in ev if e["ph"] == "X"]
fetches = [e for e in X if e.get("cat") == "fetch"]
reads = [e for e in X if e.get("cat") == "read"]
waits = [e for e in reads if e["name"] == "wait"]
hits = [e for e in reads if e["name"] in ("hit", "hits")]
pushes = [e for e in X if e.get("cat") == "push"]
refills = [e for e in ev if e["ph"] == "i" and e["name"] == "refill"]
counters = [e for e in ev if e["ph"] == "C"]
nreads = sum(e["args"].get("reads", 1) for e in reads)
order_ok = overlap_ok = True
last, end = {}, {}
for e in ev:
    if e["ph"] not in ("X", "i"):
        continue
    k = (e["pid"], e["tid"])
    if e["ts"] < last.get(k, -1):
        order_ok = False
        print("  out of order:", e)
    last[k] = e["ts"]
    if e["ph"] == "X":
        if e["ts"] < end.get(k, -1) - 0.001:
            overlap_ok = False
            print("  overlap:", e)
        end[k] = e["ts"] + e["dur"]
res = eval(sys.argv[2])
if mode == "eval":
    print(res)
    sys.exit(0)
if not res:
    print("  expression:", sys.argv[2])
    print("  events: %d fetches, %d reads (%d READs), %d waits, %d refills, "
          "%d pushes, %d counters" % (len(fetches), len(reads), nreads,
          len(waits), len(refills), len(pushes), len(counters)))
    print("  tracks:", sorted(set(names.values()))[:12])
    print("  otherData:", other)
sys.exit(0 if res else 1)
PY

# tcheck WHAT TRACE PYTHON-EXPR: a check over the trace (above);
# teval TRACE PYTHON-EXPR: the value of EXPR over the trace (its last
# line: the checker may print what is out of order first)
teval() { python3 "$WORK/tcheck.py" eval "$@" | tail -n 1; }
tcheck() {
	local what=$1 out
	shift
	if out=$(python3 "$WORK/tcheck.py" check "$@" 2>&1); then
		ok "$what"
	else
		fail "$what"
		echo "$out"
	fi
}

# ---- a traced trainer ----------------------------------------------------------
M=$WORK/mnt
T=$WORK/trace.json
if pf_mount "$SLOW" "$M" -o "trace=$T"; then
	if guard "$M" 60 "$TRAINER" --batch 4M --compute-ms 20 --check "$DATA" \
		"$M/$F0" "$M/$F1" >"$WORK/trainer.out" 2>&1; then
		ok "traced trainer: the load ran, data byte-exact"
	else
		fail "traced trainer: the load failed"
		cat "$WORK/trainer.out"
	fi
	cat "$M/.prefetchfs/stats" >"$WORK/stats.json" || fail "stats readable"
	pf_umount "$M" || fail "unmount"
	S=$WORK/stats.json
	tcheck "trace: parses as JSON, displayTimeUnit ms, an event list" "$T" \
		'd["displayTimeUnit"] == "ms" and isinstance(ev, list) and len(ev) > 0'
	tcheck "trace: fetch events with offset, size, bytes" "$T" \
		'len(fetches) > 0 and all({"offset", "size", "bytes"} <= set(e["args"]) for e in fetches)'
	tcheck "trace: read-ahead fetches" "$T" \
		'any(e["name"] == "read-ahead" for e in fetches)'
	tcheck "trace: READ events (waits or hits) with offset and size" "$T" \
		'len(waits) + len(hits) > 0 and all({"offset", "size"} <= set(e["args"]) for e in reads)'
	tcheck "trace: waits name the block waited for" "$T" \
		'all("block" in e["args"] for e in waits)'
	tcheck "trace: a stream track per file, named with its pattern" "$T" \
		'all(any(re.fullmatch(r"stream \d+ %s \(sequential\)" % re.escape(f), n) for n in names.values()) for f in ("'$F0'", "'$F1'"))'
	tcheck "trace: a fetch track per stream" "$T" \
		'all(any(re.fullmatch(r"fetches stream \d+ %s" % re.escape(f), n) for n in names.values()) for f in ("'$F0'", "'$F1'"))'
	tcheck "trace: every event's track is named" "$T" \
		'all(e["tid"] in names for e in X + refills)'
	tcheck "trace: fetches on fetch tracks, READs on stream tracks" "$T" \
		'all(names[e["tid"]].startswith("fetches ") for e in fetches) and all(names[e["tid"]].startswith("stream ") for e in reads)'
	tcheck "trace: counters of fetches in flight and memory" "$T" \
		'any(e["name"] == "fetches" and "in_flight" in e["args"] for e in counters) and any(e["name"] == "memory" for e in counters)'
	tcheck "trace: refill instants with the pattern, batch and window" "$T" \
		'len(refills) > 0 and all({"pattern", "batch", "window", "windows_ahead"} <= set(e["args"]) for e in refills)'
	tcheck "trace: timestamps in order on every track" "$T" 'order_ok'
	tcheck "trace: no overlapping X events on a track" "$T" 'overlap_ok'
	# the trace's counts against the stats: READs, waits, bytes fetched
	# and pushed, pushes (the kernel's asynchronous read-ahead may still
	# send a few READs after the trainer is done and the stats were read)
	read -r nr nw fb pb np < <(teval "$T" \
		'"%d %d %d %d %d" % (nreads, len(waits), sum(e["args"]["bytes"] for e in fetches), sum(e["args"]["bytes"] for e in pushes), len(pushes))')
	tcheck "trace: every READ shown" "$T" 'other["hit_reads_unshown"] == 0'
	stats_check "trace: as many READs as the stats counted ($nr)" "$S" \
		"t['reads'] <= ${nr:--1} <= t['reads'] + 16"
	stats_check "trace: as many waits as the stats counted ($nw)" "$S" \
		"t['waits'] <= ${nw:--1} <= t['waits'] + 16"
	stats_check "trace: the fetches hold the bytes the stats counted ($fb)" "$S" \
		"${fb:--1} >= t['bytes_fetched'] > 0"
	stats_check "trace: the pushes hold the bytes the stats counted ($pb in $np)" "$S" \
		"${pb:--1} >= t['bytes_pushed'] and (${np:--1} > 0) == (t['bytes_pushed'] > 0)"
	tcheck "trace: finished by the unmount, nothing dropped" "$T" \
		'other["stopped_by"] == "unmount" and other["events_dropped"] == 0'
	teval "$T" '"  (%d events: %d fetches, %d READs in %d events, %d waits, %d refills, %d pushes; %d tracks; %d bytes)" % (len(ev), len(fetches), nreads, len(reads), len(waits), len(refills), len(pushes), len(names), len(open(sys.argv[1]).read()))'
else
	fail "traced mount"
fi

# ---- several readers at once ------------------------------------------------------
M5=$WORK/mnt-many
T5=$WORK/many.json
if pf_mount "$SLOW" "$M5" -o "trace=$T5"; then
	pids=()
	for f in $F0 $F1 $F0 $F1; do
		guard "$M5" 60 cmp "$DATA/$f" "$M5/$f" >"$WORK/many.$f.$RANDOM" 2>&1 &
		pids+=($!)
	done
	bad=0
	for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
	check "four readers: every one read its file byte-exact ($bad did not)" test $bad -eq 0
	cat "$M5/.prefetchfs/stats" >"$WORK/many-stats.json" || fail "stats readable"
	pf_umount "$M5" || fail "unmount"
	S=$WORK/many-stats.json
	tcheck "four readers: the trace parses, with fetches and READs" "$T5" \
		'len(fetches) > 0 and len(reads) > 0 and other["events_dropped"] == 0'
	tcheck "four readers: timestamps in order, no overlap on a track" "$T5" \
		'order_ok and overlap_ok'
	read -r nr nw < <(teval "$T5" '"%d %d" % (nreads, len(waits))')
	stats_check "four readers: READs and waits as the stats counted ($nr, $nw)" "$S" \
		"t['reads'] <= ${nr:--1} <= t['reads'] + 16 and t['waits'] <= ${nw:--1} <= t['waits'] + 16"
	tcheck "four readers: stream tracks for both files" "$T5" \
		'all(any(n.startswith("stream ") and (" %s " % f) in n for n in names.values()) for f in ("'$F0'", "'$F1'"))'
else
	fail "four readers mount"
fi

# ---- a bad trace path ------------------------------------------------------------
M2=$WORK/mnt-bad
mkdir -p "$M2"
MOUNTS+=("$M2")
for bad in "$WORK/no/such/dir/t.json" "$WORK"; do
	"$PF" -o "trace=$bad" "$SLOW" "$M2" >"$WORK/bad.out" 2>&1
	rc=$?
	check "trace=$bad: the mount fails (exit $rc)" test $rc -ne 0
	check "trace=$bad: one line: $(head -1 "$WORK/bad.out")" one_line_err "$WORK/bad.out"
	check "trace=$bad: the line names the file" grep -qF "$bad" "$WORK/bad.out"
	check "trace=$bad: nothing mounted" bash -c '! mountpoint -q "$1"' _ "$M2"
done

# ---- trace_seconds ------------------------------------------------------------------
M3=$WORK/mnt-short
T3=$WORK/short.json
if pf_mount "$SLOW" "$M3" -o "trace=$T3,trace_seconds=1"; then
	start=$(date +%s.%N)
	guard "$M3" 60 "$TRAINER" --batch 4M --compute-ms 100 "$M3/$F0" "$M3/$F1" \
		>"$WORK/short.out" 2>&1 || { fail "trace_seconds: the load failed"; cat "$WORK/short.out"; }
	# the load took more than the second traced; wait for the writer's tick
	for i in $(seq 50); do
		python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T3" 2>/dev/null && break
		sleep 0.1
	done
	echo "  (the load took $(python3 -c "import time; print('%.1f' % (time.time() - $start))") s)"
	check "trace_seconds=1: the daemon still serves" mountpoint -q "$M3"
	tcheck "trace_seconds=1: the file is complete JSON before the unmount" "$T3" \
		'other["stopped_by"] == "time limit" and other["limit_s"] == 1'
	cp "$T3" "$WORK/short.before"
	pf_umount "$M3" || fail "unmount"
	check "trace_seconds=1: the unmount did not touch the file" cmp -s "$T3" "$WORK/short.before"
	tcheck "trace_seconds=1: every ts <= 1 s" "$T3" \
		'all(e["ts"] <= 1e6 for e in ev if "ts" in e)'
	tcheck "trace_seconds=1: events in the second traced" "$T3" \
		'len(fetches) > 0 and len(reads) > 0'
else
	fail "trace_seconds mount"
fi

# ---- SIGTERM in the middle ------------------------------------------------------------
M4=$WORK/mnt-term
T4=$WORK/term.json
if pf_mount "$SLOW" "$M4" -o "trace=$T4"; then
	pid=$(pf_pid "$M4")
	"$TRAINER" --batch 4M --compute-ms 100 "$M4/$F0" "$M4/$F1" >/dev/null 2>&1 &
	reader=$!
	sleep 0.7
	kill -TERM "$pid"
	check "SIGTERM: the daemon exits" wait_gone "$pid" 100
	wait_gone "$reader" 50 || kill -9 "$reader" 2>/dev/null
	wait "$reader" 2>/dev/null
	tcheck "SIGTERM: the file is complete JSON with the events so far" "$T4" \
		'other["stopped_by"] == "unmount" and len(fetches) > 0 and order_ok'
else
	fail "SIGTERM mount"
fi

finish
