#!/bin/bash
# The example trainers in examples/ and the fio jobs in examples/fio/, run
# as their header comments say against a prefetchfs mount of a slow source
# (bench/slowfs, 2 ms per READ): each must exit 0 and print its key=value
# line with sane figures (data wait within 0-100 %, compute no longer
# than the run, bytes and samples as many as the data holds).  Bytes are
# checked where it is cheap: the DataLoader's and the tar reader's digests
# equal those of a run on the source directory, the memmap reader compares
# every row with the source (--check).  After each sequential example the
# daemon's stats must show a sequential stream of the files it read.
#
# The examples need python3-torch, python3-numpy (for /usr/bin/python3)
# and fio, which tests/deps.sh installs: a missing one is a failure.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$SLOWFS" "$MKDATA"
PY=/usr/bin/python3
EX=$TOP/examples

missing=
$PY -c 'import torch' 2>/dev/null || missing="$missing python3-torch"
$PY -c 'import numpy' 2>/dev/null || missing="$missing python3-numpy"
command -v fio >/dev/null || missing="$missing fio"
if [ -n "$missing" ]; then
	fail "missing packages (tests/deps.sh installs them):$missing"
	finish
fi

MiB=1048576
SRC=$WORK/src
SLOW=$WORK/slow
M=$WORK/mnt
mkdir -p "$SRC"
# data.bin: 32 MiB; shards/shard-{0..3}.bin: 4 MiB each; tokens.bin:
# 16 MiB of uint16 tokens; tar/: 2 shards of 128 samples of 64 KiB
"$MKDATA" --seed 3 "$WORK/gen" 1 32M >/dev/null 2>&1 || fail "bench/mkdata"
mv "$WORK/gen/file-000000.bin" "$SRC/data.bin"
"$MKDATA" --seed 4 "$SRC/shards" 4 4M >/dev/null 2>&1 || fail "bench/mkdata"
for i in 0 1 2 3; do
	mv "$SRC/shards/file-00000$i.bin" "$SRC/shards/shard-$i.bin"
done
quiet $PY "$EX/memmap_tokens.py" --make "$SRC/tokens.bin" 16M ||
	fail "memmap_tokens.py --make"
quiet $PY "$EX/tar_shards.py" --make "$SRC/tar" --shards 2 --samples 128 \
	--sample-size 64K || fail "tar_shards.py --make"
check "the sample data was made" test -s "$SRC/data.bin" -a -s "$SRC/tokens.bin" \
	-a -s "$SRC/shards/shard-3.bin" -a -s "$SRC/tar/shard-000001.tar"

slowfs_mount "$SRC" "$SLOW" -o latency_ms=2 || { fail "slowfs mount"; finish; }
pf_mount "$SLOW" "$M" || { fail "prefetchfs mount"; finish; }
ok "mounted prefetchfs over bench/slowfs"

# kv FILE EXPR: EXPR is true of the last key=value line of FILE, where d
# maps each key to its value (a float where it is a number).  The figures
# every example prints are checked too.
kv() {
	python3 - "$1" "$2" <<'PY'
import sys
lines = [l for l in open(sys.argv[1]) if "data_wait_pct=" in l]
if not lines:
    sys.exit("  no key=value line with data_wait_pct in the output")
d = {}
for kv in lines[-1].split():
    k, _, v = kv.partition("=")
    try:
        d[k] = float(v)
    except ValueError:
        d[k] = v
sane = (0 <= d["data_wait_pct"] <= 100 and d["wall_s"] > 0 and
        0 <= d["compute_s"] <= d["wall_s"] * 1.001 and d["mb_s"] > 0 and
        d["bytes"] > 0)
if not sane or not eval(sys.argv[2]):
    sys.exit("  %s\n  expected: %s" % (lines[-1].strip(),
             "sane figures" if not sane else sys.argv[2]))
PY
}

# run NAME EXPR COMMAND...: run COMMAND (a hang kills the daemon after 60
# s), check it exits 0 and its key=value line satisfies EXPR (see kv)
run() {
	local name=$1 expr=$2 rc out
	shift 2
	guard "$M" 60 "$@" >"$WORK/$name.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name: exit $rc"
		tail -20 "$WORK/$name.out"
		return 1
	fi
	if out=$(kv "$WORK/$name.out" "$expr" 2>&1); then
		ok "$name: $(grep data_wait_pct= "$WORK/$name.out" | tail -1)"
	else
		fail "$name: its key=value line"
		echo "$out"
		return 1
	fi
}

# learned WHAT PREFIX: the daemon has a sequential stream of a file whose
# path starts with PREFIX (a sequential example's reads were learned as
# such; streams of files read in the last minute are in the stats)
learned() {
	stats_check "$1: prefetchfs learned sequential streams" "$M" \
		"any(x['pattern'] == 'sequential' for x in streams('$2'))" &&
		echo "  batches: $(stats_eval "$M" "sorted({x['batch'] for x in streams('$2') if x['pattern'] == 'sequential'})")"
}

# value NAME KEY: KEY's value in the key=value line of run NAME
value() {
	grep data_wait_pct= "$WORK/$1.out" | tail -1 | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# ---- the Python examples ----------------------------------------------------
run simple_trainer "d['bytes'] == 32 * 2**20 and d['batches'] == 4" \
	$PY "$EX/simple_trainer.py" --batch 8M --compute-ms 20 "$M/data.bin"
learned simple_trainer data.bin

# the digests of the source, for the runs on the mount
$PY "$EX/torch_loader.py" --workers 0 --compute-ms 0 --checksum \
	--batch 16 "$SRC/shards" >"$WORK/torch_src.out" 2>&1 || fail "torch_loader.py on the source"
TORCH_DIGEST=$(grep -o 'digest=[0-9a-f]*' "$WORK/torch_src.out")
$PY "$EX/tar_shards.py" --compute-ms 0 --checksum "$SRC/tar" \
	>"$WORK/tar_src.out" 2>&1 || fail "tar_shards.py on the source"
TAR_SHA=$(grep -o 'sha256=[0-9a-f]*' "$WORK/tar_src.out")

# 4 shards of 64 records of 64 KiB: 256 samples, 16 batches of 16
run torch_loader "d['samples'] == 256 and d['batches'] == 16 and d['bytes'] == 16 * 2**20" \
	$PY "$EX/torch_loader.py" --record 64K --batch 16 --workers 2 \
	--compute-ms 10 --checksum "$M/shards"
learned torch_loader shards/
check "torch_loader: records byte-exact (digest of the source: $TORCH_DIGEST)" \
	test -n "$TORCH_DIGEST" -a "digest=$(value torch_loader digest)" = "$TORCH_DIGEST"
run torch_loader_shuffle "d['samples'] == 256 and d['batches'] == 16" \
	$PY "$EX/torch_loader.py" --record 64K --batch 16 --workers 2 \
	--compute-ms 10 --shuffle --seed 5 --checksum "$M/shards"
check "torch_loader --shuffle: records byte-exact" \
	test -n "$TORCH_DIGEST" -a "digest=$(value torch_loader_shuffle digest)" = "$TORCH_DIGEST"
# records of 100000 bytes, 41 a shard; two shards, two epochs
run torch_loader_epochs "d['samples'] == 2 * 2 * 41 and d['batches'] == 2 * 11" \
	$PY "$EX/torch_loader.py" --record 100000 --batch 8 --workers 1 \
	--compute-ms 5 --epochs 2 "$M/shards/shard-1.bin" "$M/shards/shard-2.bin"

# 8 Mi tokens, 32 rows of 1024 a step: one pass is 255 steps
run memmap_sequential "d['steps'] == 255 and d['tokens'] == 255 * 32 * 1024 and d['mismatches'] == 0" \
	$PY "$EX/memmap_tokens.py" --mode sequential --batch 32 --block-size 1024 \
	--compute-ms 5 --check "$SRC/tokens.bin" "$M/tokens.bin"
learned memmap_sequential tokens.bin
run memmap_random "d['steps'] == 100 and d['tokens'] == 100 * 12 * 1024 and d['mismatches'] == 0" \
	$PY "$EX/memmap_tokens.py" --mode random --batch 12 --block-size 1024 \
	--steps 100 --compute-ms 5 --check "$SRC/tokens.bin" "$M/tokens.bin"

# 2 shards of 128 samples, each a .bin, a .cls and a .json
run tar_shards "d['shards'] == 2 and d['samples'] == 256 and d['batches'] == 16" \
	$PY "$EX/tar_shards.py" --batch 16 --compute-ms 10 --checksum "$M/tar"
learned tar_shards tar/
check "tar_shards: samples byte-exact (sha256 of the source: ${TAR_SHA#sha256=})" \
	test -n "$TAR_SHA" -a "sha256=$(value tar_shards sha256)" = "$TAR_SHA"

# bad input: an argparse error line, exit 2, no traceback
bad_input() { # bad_input LOG COMMAND...
	local log=$1
	shift
	"$@" >"$log" 2>&1
	[ $? -eq 2 ] && [ "$(grep -c 'error: ' "$log")" -eq 1 ] && ! grep -q Traceback "$log"
}
check "torch_loader.py on a missing path: one error line, exit 2" \
	bad_input "$WORK/err1" $PY "$EX/torch_loader.py" "$M/nothing"
check "memmap_tokens.py --make with a bad size: one error line, exit 2" \
	bad_input "$WORK/err2" $PY "$EX/memmap_tokens.py" --make "$WORK/x.bin" 12Q
check "tar_shards.py on a directory without shards: one error line, exit 2" \
	bad_input "$WORK/err3" $PY "$EX/tar_shards.py" "$M/shards"

# ---- the fio jobs ---------------------------------------------------------------
# fio_job NAME ARGS... EXPR: run examples/fio/NAME.fio with ARGS; every job
# must end without error and EXPR must hold of the totals (jobs, bytes)
fio_job() {
	local name=$1 expr=${*: -1} args=("${@:2:$#-2}") rc out
	guard "$M" 60 fio --readonly --output-format=json "${args[@]}" \
		"$EX/fio/$name.fio" >"$WORK/fio.$name.json" 2>"$WORK/fio.$name.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "fio $name: exit $rc"
		cat "$WORK/fio.$name.err"
		return 1
	fi
	# the data wait of each job, as examples/fio/datawait.py prints it
	if ! $PY "$EX/fio/datawait.py" "$WORK/fio.$name.json" >"$WORK/fio.$name.out" 2>&1; then
		fail "fio $name: datawait.py (a job failed or read nothing)"
		cat "$WORK/fio.$name.out"
		return 1
	fi
	if out=$(python3 - "$WORK/fio.$name.out" "$expr" 2>&1 <<'PY'
import sys
jobs = []
for line in open(sys.argv[1]):
    d = {}
    for kv in line.split():
        k, _, v = kv.partition("=")
        d[k] = v if k == "job" else float(v)
    jobs.append(d)
n = len(jobs)
total = sum(d["bytes"] for d in jobs)
sane = all(0 <= d["data_wait_pct"] <= 100 and d["wall_s"] > 0 and
           d["error"] == 0 for d in jobs)
if not sane or not eval(sys.argv[2]):
    sys.exit("  jobs=%d bytes=%d; expected: %s\n%s" % (
        n, total, sys.argv[2], open(sys.argv[1]).read()))
PY
	); then
		ok "fio $name: $(tr '\n' ';' <"$WORK/fio.$name.out" | sed 's/;$//; s/;/; /g')"
	else
		fail "fio $name"
		echo "$out"
	fi
}

check "every fio job file parses" bash -c 'for f in "$1"/*.fio; do fio --parse-only "$f" >/dev/null || exit 1; done' _ "$EX/fio"
fio_job seq-batches --filename="$M/data.bin" 'n == 1 and total == 32 * 2**20'
fio_job seq-batches-mmap --filename="$M/data.bin" 'n == 1 and total == 32 * 2**20'
fio_job strided-ranks --filename="$M/data.bin" \
	'n == 4 and all(d["bytes"] == 8 * 2**20 for d in jobs)'
fio_job per-shard --directory="$M/shards" \
	'n == 4 and all(d["bytes"] == 4 * 2**20 for d in jobs)'
fio_job scan --filename="$M/data.bin" 'n == 1 and total == 32 * 2**20'
fio_job random --filename="$M/data.bin" \
	'n == 2 and all(d["bytes"] == 16 * 2**20 and d["ios"] == 256 for d in jobs)'

stats_check "the daemon served the examples (bytes_served + bytes_pushed > 0)" \
	"$M" 't["bytes_served"] + t.get("bytes_pushed", 0) > 0'

finish
