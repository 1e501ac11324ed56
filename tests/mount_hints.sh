#!/bin/bash
# The hint channel's Python side (issue 13): examples/prefetchfs_hints.py.
#  1. tests/test_hints.py, which needs no mount (a temp directory with a
#     regular .prefetchfs/plan stands for the mount): indices unchanged
#     for every sampler kind, the plan written, DataLoader workers.
#  2. examples/torch_loader.py --hints --shuffle over a prefetchfs mount,
#     two epochs, two workers: the records read are byte-exact (its digest
#     equals that of a run on the source).  A mount that has the control
#     file must take the plan without a warning; one that has not (the
#     daemon before the channel is wired in) must give exactly one warning
#     and the same records.
#  3. The same on the source directory, not a prefetchfs mount: one
#     warning, the same records.
#  4. The control file MOUNTPOINT/.prefetchfs/plan: its mode, a bad line
#     (EINVAL, the line number in the stats and in the log), a missing
#     path (counted, skipped), a read-only open and another uid (EACCES),
#     two writer handles at once (two plans), a new plan at offset 0
#     (replaces), closing (the plan goes, its counts stay in
#     plans_ended), the rest of the mount still EROFS.
#  5. torch_loader.py --hints --shuffle over a mount of a slow source
#     (bench/slowfs, 20 ms a READ): byte-exact, and the plans read as
#     planned and fetched ahead.
# Needs python3-torch for /usr/bin/python3 (tests/deps.sh installs it): a
# missing one is a failure.
. "$(dirname "$0")/lib.sh"
need_fuse
PY=/usr/bin/python3
EX=$TOP/examples

if ! $PY -c 'import torch' 2>/dev/null; then
	fail "missing package python3-torch (tests/deps.sh installs it)"
	finish
fi

if (cd "$TOP" && $PY -W error::ResourceWarning -m unittest tests/test_hints.py) \
	>"$WORK/unittest.out" 2>&1; then
	ok "tests/test_hints.py: $(grep -E '^Ran ' "$WORK/unittest.out")"
else
	fail "tests/test_hints.py"
	tail -40 "$WORK/unittest.out"
fi

SRC=$WORK/src
M=$WORK/mnt
mkdir -p "$SRC/shards"
for i in 0 1 2; do
	mkfile "$SRC/shards/shard-$i.bin" $((2 * 1048576)) # 32 records each
done
pf_mount "$SRC" "$M" || { fail "prefetchfs mount"; finish; }
ok "mounted prefetchfs"

# loader NAME PATH [--hints ...]: torch_loader.py over PATH, 2 epochs of
# the 96 records of 64 KiB, shuffled; its output in $WORK/NAME.out
loader() {
	local name=$1 path=$2
	shift 2
	guard "$M" 120 $PY "$EX/torch_loader.py" --record 64K --batch 8 \
		--workers 2 --compute-ms 2 --epochs 2 --shuffle --seed 9 \
		--checksum "$@" "$path" >"$WORK/$name.out" 2>&1
}
digest() { grep -o 'digest=[0-9a-f]*' "$WORK/$1.out"; }
warnings_of() { grep -c 'not a prefetchfs mount with hints' "$WORK/$1.out"; }

loader src "$SRC/shards" || fail "torch_loader.py on the source"
WANT=$(digest src)
check "the source's digest ($WANT) covers 2 x 96 records" \
	grep -q 'samples=192 .*digest=' "$WORK/src.out"

if loader mnt "$M/shards" --hints; then
	check "--hints on the mount: records byte-exact" \
		test -n "$WANT" -a "$(digest mnt)" = "$WANT"
	if [ -e "$M/.prefetchfs/plan" ]; then
		check "--hints on a mount with the control file: no warning" \
			test "$(warnings_of mnt)" -eq 0
	else
		check "--hints on a mount without the control file: one warning" \
			test "$(warnings_of mnt)" -eq 1
	fi
	check "--hints on the mount: no traceback" \
		test "$(grep -c Traceback "$WORK/mnt.out")" -eq 0
else
	fail "torch_loader.py --hints on the mount"
	tail -20 "$WORK/mnt.out"
fi

if loader srchints "$SRC/shards" --hints --mountpoint "$SRC"; then
	check "--hints on a plain directory: records byte-exact" \
		test "$(digest srchints)" = "$WANT"
	check "--hints on a plain directory: one warning" \
		test "$(warnings_of srchints)" -eq 1
else
	fail "torch_loader.py --hints on the source"
	tail -20 "$WORK/srchints.out"
fi

# ---- the control file ---------------------------------------------------
M2=$WORK/mnt2
PLAN=$M2/.prefetchfs/plan
if pf_mount "$SRC" "$M2" -o log_file="$WORK/pf2.log"; then
	check "the plan file is mode 0200 (no allow_other)" \
		test "$(stat -c %a "$PLAN")" = 200
	# ctl.py PYTHON: runs PYTHON with m (the mount), plan (its path),
	# stats() (the parsed stats file) and os, errno, json, sys
	ctl() {
		$PY - "$M2" "$@" >>"$WORK/ctl.out" 2>&1 <<-PYEOF
		import errno, json, os, sys
		m = sys.argv[1]
		plan = m + "/.prefetchfs/plan"
		def stats():
		    with open(m + "/.prefetchfs/stats") as f:
		        return json.load(f)
		def err_of(fn):
		    try:
		        fn()
		    except OSError as e:
		        return e.errno
		    return 0
		$1
		PYEOF
	}
	check "a bad line: EINVAL, 'line 2' in the plan's why" ctl '
fd = os.open(plan, os.O_WRONLY)
e = err_of(lambda: os.write(fd, b"shards/shard-0.bin\nshards/shard-1.bin 0 0\n"))
p = stats()["plans"]
print("bad line:", e, p)
ok = e == errno.EINVAL and len(p) == 1 and p[0]["state"] == "abandoned" \
    and "line 2" in p[0]["why"] and p[0]["bad_writes"] == 1 and p[0]["entries"] == 0
# later writes of that plan fail too, until one at offset 0
e2 = err_of(lambda: os.pwrite(fd, b"shards/shard-0.bin\n", 100))
os.pwrite(fd, b"shards/shard-0.bin\n", 0)
p = stats()["plans"]
print("after:", e2, p)
ok = ok and e2 == errno.EINVAL and p[0]["state"] == "following" and p[0]["entries"] == 1
os.close(fd)
sys.exit(not ok)'
	check "a bad line: 'write refused' with the line in the log" \
		grep -q 'write refused: .*line 2: zero length' "$WORK/pf2.log"
	check "a missing path: counted and skipped" ctl '
fd = os.open(plan, os.O_WRONLY | os.O_TRUNC)
n = os.write(fd, b"shards/none.bin\nshards/shard-1.bin 65536 65536\n../etc/passwd\n")
p = stats()["plans"]
print("missing:", n, p)
os.close(fd)
sys.exit(not (n == 61 and p[0]["missing"] == 2 and p[0]["declared"] == 3
              and p[0]["entries"] == 1))'
	check "a read-only open of the plan file: EACCES" ctl '
sys.exit(err_of(lambda: open(plan, "rb")) != errno.EACCES)'
	check "writing a data file or making one: still EROFS" ctl '
sys.exit(not (err_of(lambda: open(m + "/shards/shard-0.bin", "r+b")) == errno.EROFS
              and err_of(lambda: open(m + "/new", "wb")) == errno.EROFS
              and err_of(lambda: os.chmod(plan, 0o666)) == errno.EROFS))'
	check "two writer handles at once: two plans, each its own" ctl '
a = os.open(plan, os.O_WRONLY)
b = os.open(plan, os.O_WRONLY)
os.write(a, b"shards/shard-0.bin\nshards/shard-1.bin\n")
os.write(b, b"shards/shard-2.bin 0 4096\n")
os.write(a, b"shards/shard-2.bin\n")
p = sorted(stats()["plans"], key=lambda x: x["id"])
print("two:", p)
ok = len(p) == 2 and p[0]["entries"] == 3 and p[1]["entries"] == 1
os.pwrite(b, b"shards/shard-1.bin\nshards/shard-0.bin\n", 0)
p = sorted(stats()["plans"], key=lambda x: x["id"])
print("replaced:", p)
ok = ok and p[1]["entries"] == 2 and p[1]["gen"] == 2 and p[0]["entries"] == 3
os.close(a)
p = stats()["plans"]
ok = ok and len(p) == 1
os.close(b)
s = stats()
print("closed:", s["plans"], s["plans_ended"])
ok = ok and s["plans"] == [] and s["plans_ended"]["plans"] >= 4
sys.exit(not ok)'
	if command -v setpriv >/dev/null; then
		check "another uid: EACCES on the plan file" \
			setpriv --reuid=65534 --regid=65534 --clear-groups \
			$PY -c 'import errno, sys
try:
    open(sys.argv[1], "wb")
except OSError as e:
    sys.exit(e.errno != errno.EACCES)
sys.exit(1)' "$PLAN"
	else
		fail "setpriv missing (util-linux)"
	fi
	pf_umount "$M2"
	tail -20 "$WORK/ctl.out"
else
	fail "prefetchfs mount for the control file"
fi

# ---- a plan followed over a slow source -------------------------------------
SLOW=$WORK/slow
M3=$WORK/mnt3
if slowfs_mount "$SRC" "$SLOW" -o latency_ms=20 &&
	pf_mount "$SLOW" "$M3" -o max_memory=64M; then
	if guard "$M3" 180 $PY "$EX/torch_loader.py" --record 64K --batch 8 \
		--workers 2 --compute-ms 5 --epochs 2 --shuffle --seed 9 \
		--checksum --hints "$M3/shards" >"$WORK/slow.out" 2>&1; then
		check "--hints over a slow source: records byte-exact" \
			test -n "$WANT" -a "$(digest slow)" = "$WANT"
		stats_json "$M3" >"$WORK/slow.json"
		cat "$WORK/slow.out"
		json_eval 's["plans_ended"]' <"$WORK/slow.json"
		json_eval 's["totals"]' <"$WORK/slow.json"
		check "--hints over a slow source: two plans (epochs), entries read as planned" \
			test "$(json_eval 'int(s["plans_ended"]["plans"] >= 2 and s["plans_ended"]["read_planned"] > 0)' \
				<"$WORK/slow.json")" = 1
		check "--hints over a slow source: entries fetched ahead" \
			test "$(json_eval 'int(s["plans_ended"]["fetched"] > 0 and s["totals"]["bytes_prefetched"] > 0)' \
				<"$WORK/slow.json")" = 1
	else
		fail "torch_loader.py --hints over a slow source"
		tail -20 "$WORK/slow.out"
	fi
	pf_umount "$M3"
else
	fail "mount of a slow source"
fi

# prefetchfs-stat shows the plans of a stats file that has some (a
# directory holding one stands for the mount)
FAKE=$WORK/fake
mkdir -p "$FAKE/.prefetchfs"
cat >"$FAKE/.prefetchfs/stats" <<'EOF'
{"backend": "posix", "totals": {"reads": 1}, "streams": [], "plans": [
 {"state": "abandoned", "why": "reads stopped matching: 10 of the last 64 READs of its files were in the plan",
  "id": 3, "gen": 1, "entries": 1281167, "next_entry": 5120, "ahead_entries": 0, "ahead_bytes": 0,
  "read_planned": 5200, "read_unplanned": 54, "wasted_bytes": 73400320, "latency_ns": 52300000},
 {"state": "following", "why": "", "id": 4, "gen": 2, "entries": 640, "next_entry": 12,
  "ahead_entries": 80, "ahead_bytes": 9175040, "read_planned": 12, "read_unplanned": 0,
  "wasted_bytes": 0, "latency_ns": 0}]}
EOF
COLUMNS=200 "$TOP/prefetchfs-stat" -n 1 "$FAKE" >"$WORK/stat.out" 2>&1
check "prefetchfs-stat: a line per plan" \
	grep -qE '^3 +abandoned +1281167 +5120 +0 +0 +5200 +54 +70.0M +52.3  reads stopped matching: 10 of' "$WORK/stat.out"
check "prefetchfs-stat: a following plan" \
	grep -qE '^4 +following +640 +12 +80 +8.8M +12 +0 +0 +-  $' "$WORK/stat.out"

finish
