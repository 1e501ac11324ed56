#!/bin/bash
# prefetchfs-warm (issue 31): a tree fetched into the cache tiers before a
# job, through the daemon, at full concurrency, with progress.
#   1. over nginx with a disk cache: --json prints lines of exactly the
#      keys the Python package reads, the last one done with every file
#      and byte; every file was fetched (nginx's log), none through the
#      page cache (the daemon saw no open and no READ); the disk cache
#      holds the tree
#   2. a second warm of the same tree fetches nothing (nginx's log)
#   3. after a remount every file reads byte-exact without a request
#   4. a tree that does not fit: one line saying what to remount with,
#      exit 1, nothing fetched
#   5. interrupted (SIGINT) half-way over a slow store: one line, exit 1;
#      run again it resumes (what was fetched is not fetched again)
#   6. on a terminal a progress line with files, bytes, rate and ETA; the
#      Python package's warm() reads its --json; not a prefetchfs mount, a
#      path outside the mount: one line, exit 1
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools "$TOP/prefetchfs-warm" "$TOP/bench/delayproxy"

WARM=$TOP/prefetchfs-warm
SRC=$WORK/src
M=$WORK/mnt
mkdir -p "$SRC/train/cls0" "$SRC/train/cls1" "$SRC/val"
python3 - "$SRC" <<'PY'
import os, random, sys
random.seed(7)
for i in range(60):
    d = os.path.join(sys.argv[1], "train", "cls%d" % (i % 2))
    with open(os.path.join(d, "img%03d.jpg" % i), "wb") as f:
        f.write(random.randbytes(20000 + 331 * i))
with open(os.path.join(sys.argv[1], "val", "shard.bin"), "wb") as f:
    f.write(random.randbytes(12 << 20))
PY
NFILES=$(find "$SRC" -type f | wc -l)
TOTAL=$(find "$SRC" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
NTRAIN=$(find "$SRC/train" -type f | wc -l)

# json_ok FILE N BYTES: every line of FILE is an object of exactly the
# keys prefetchfs.warm() reads; the last one done, N files, BYTES bytes
json_ok() {
	python3 - "$@" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
keys = {"files", "files_total", "bytes", "bytes_total", "rate", "eta_s", "done"}
assert lines, "no line"
for l in lines:
    o = json.loads(l)
    assert set(o) == keys, (sorted(o), l)
    assert o["files_total"] == int(sys.argv[2]) and o["bytes_total"] == int(sys.argv[3]), l
    assert o["eta_s"] is None or o["eta_s"] >= 0, l
last = json.loads(lines[-1])
assert last["done"] is True and all(not json.loads(l)["done"] for l in lines[:-1]), lines
assert last["files"] == int(sys.argv[2]) and last["bytes"] == int(sys.argv[3]), last
assert last["rate"] > 0, last
PY
}

nginx_start "$SRC" --json >/dev/null || { fail "nginx"; finish; }

# ---- 1. a first warm-up, over nginx, with a disk cache ---------------------------
OPTS=cache_dir=$WORK/cache,max_memory=64M
pf_mount "$NGINX_URL" "$M" -o "$OPTS" || { fail "mount"; finish; }
before=$(data_gets)
"$WARM" --json "$M" >"$WORK/1.json" 2>"$WORK/1.err"
rc=$?
check "1. prefetchfs-warm --json exits 0 (exit $rc): $(cat "$WORK/1.err")" test $rc -eq 0
cat "$WORK/1.json"
check "1. JSON lines with the keys warm() reads; the last done, $NFILES files, $TOTAL bytes" \
	json_ok "$WORK/1.json" "$NFILES" "$TOTAL"
fetched=$(($(data_gets) - before))
check "1. every file fetched from the store ($fetched GETs of data for $NFILES files)" \
	test "$fetched" -ge "$NFILES"
stats_check "1. through the daemon only: no open, no READ reached it (no page cache)" \
	"$M" 't["opens"] == 0 and t["reads"] == 0'
stats_check "1. the disk cache holds the tree" "$M" "c['bytes_cached'] >= $TOTAL"

# ---- 2. the same tree again --------------------------------------------------------
before=$(data_gets)
"$WARM" "$M" >"$WORK/2.out" 2>&1
rc=$?
check "2. a second warm exits 0 (exit $rc): $(tail -1 "$WORK/2.out")" test $rc -eq 0
check "2. and fetches nothing ($(($(data_gets) - before)) GETs of data)" \
	test "$(data_gets)" -eq "$before"
check "2. its last line: warm: $NFILES files" grep -q "^warm: $NFILES files, " "$WORK/2.out"
pf_umount "$M" || fail "2. unmount"

# ---- 3. a remount reads from the disk ----------------------------------------------
pf_mount "$NGINX_URL" "$M" -o "$OPTS" || { fail "remount"; finish; }
before=$(data_gets)
check "3. after a remount every file reads byte-exact" all_same "$M"
check "3. without a GET of data ($(($(data_gets) - before)))" test "$(data_gets)" -eq "$before"
pf_umount "$M" || fail "3. unmount"

# ---- 4. too big for the tiers ---------------------------------------------------------
pf_mount "$NGINX_URL" "$M" -o max_memory=16M || { fail "4. mount"; finish; }
before=$(data_gets)
"$WARM" "$M" >"$WORK/4.out" 2>"$WORK/4.err"
rc=$?
check "4. too big: exit 1, one line naming cache_dir and max_memory: $(cat "$WORK/4.err")" \
	bash -c '[ "$1" -eq 1 ] && [ "$(wc -l <"$2")" -eq 1 ] &&
		grep -qE "^prefetchfs-warm: .* do not fit .* remount with cache_dir=DIR, or max_memory=[0-9.]+[MG] or more$" "$2"' \
	_ "$rc" "$WORK/4.err"
check "4. nothing fetched" test "$(data_gets)" -eq "$before"
# the part that fits does
"$WARM" -q "$M" train >"$WORK/4b.out" 2>&1
rc=$?
check "4. train/ fits and warms (exit $rc): $(cat "$WORK/4b.out")" test $rc -eq 0 -a ! -s "$WORK/4b.out"
pf_umount "$M" || fail "4. unmount"

# ---- 5. interrupted, then resumed ------------------------------------------------------
# one fetch of 1 MiB in flight at a time, at 4 MiB/s: the 12 MiB shard
# is still being read when the small files are done
delayproxy_start "127.0.0.1:$NGINX_PORT" 20 $((4 << 20)) >/dev/null || { fail "delayproxy"; finish; }
pf_mount "$DELAY_URL/" "$M" -o cache_dir=$WORK/cache5,max_memory=64M,max_inflight=1,fetch_size=1M ||
	{ fail "5. mount"; finish; }
g0=$(data_gets)
"$WARM" --json "$M" >"$WORK/5.json" 2>"$WORK/5.err" &
wpid=$!
for i in $(seq 200); do
	[ "$(stats_eval "$M" 't["bytes_fetched"] > 2 << 20')" = True ] && break
	sleep 0.05
done
kill -INT "$wpid"
wait "$wpid"
rc=$?
check "5. interrupted: exit 1, one line: $(cat "$WORK/5.err")" \
	bash -c '[ "$1" -eq 1 ] && [ "$(wc -l <"$2")" -eq 1 ] && grep -q "^prefetchfs-warm: interrupted after .* run it again to go on$" "$2"' \
	_ "$rc" "$WORK/5.err"
# what was on its way lands; nothing more is asked
for i in $(seq 200); do
	[ "$(stats_eval "$M" 't["inflight"] == 0')" = True ] && break
	sleep 0.05
done
b1=$(stats_eval "$M" 't["bytes_fetched"]')
g1=$(data_gets)
check "5. it stopped part-way ($b1 of $TOTAL bytes fetched)" test "$b1" -lt "$TOTAL"
"$WARM" --json "$M" >"$WORK/5b.json" 2>"$WORK/5b.err"
check "5. run again: exit 0, done: $(cat "$WORK/5b.err")" json_ok "$WORK/5b.json" "$NFILES" "$TOTAL"
g2=$(data_gets)
check "5. it resumed: $((g2 - g1)) GETs of data the second time, $((g1 - g0)) the first, for $NFILES files" \
	test $((g2 - g1)) -lt $((NFILES - 1))
check "5. byte-exact after" all_same "$M"
pf_umount "$M" || fail "5. unmount"

# ---- 6. a terminal; mistakes -------------------------------------------------------------
pf_mount "$SRC" "$M" -o max_memory=64M || { fail "6. mount"; finish; }
TERM=dumb script -qec "$WARM $M train" /dev/null >"$WORK/6.tty" 2>&1
check "6. on a terminal: exit 0" test $? -eq 0
check "6. a progress line rewritten in place: files, bytes, rate, ETA" \
	python3 -c '
import re, sys
t = open(sys.argv[1], "rb").read().decode()
assert re.search(r"\r\x1b\[Kwarm: \d+/%s files, [0-9.]+ \S+/[0-9.]+ \S+, [0-9.]+ \S+/s, ETA \S+ s" % sys.argv[2], t), repr(t)
assert re.search(r"warm: %s files, [0-9.]+ \S+ in [0-9.]+ s" % sys.argv[2], t), repr(t)' "$WORK/6.tty" "$NTRAIN"
"$WARM" "$WORK" >/dev/null 2>"$WORK/6a.err"
rc=$?
check "6. not a prefetchfs mount: exit 1 ($rc), one line: $(cat "$WORK/6a.err")" \
	bash -c '[ "$2" -eq 1 ] && [ "$(wc -l <"$1")" -eq 1 ] && grep -q "not a prefetchfs mount" "$1"' _ "$WORK/6a.err" "$rc"
"$WARM" "$M" /etc >/dev/null 2>"$WORK/6b.err"
check "6. a path outside the mount: $(cat "$WORK/6b.err")" \
	grep -q "^prefetchfs-warm: /etc: not under the mount " "$WORK/6b.err"
"$WARM" "$M" train/none >/dev/null 2>"$WORK/6c.err"
check "6. a missing path: $(cat "$WORK/6c.err")" \
	grep -q "^prefetchfs-warm: train/none: No such file or directory$" "$WORK/6c.err"
# the Python package's warm() runs this prefetchfs-warm and reads its lines
check "6. prefetchfs.warm() of the Python package: done, $NTRAIN files" \
	env PYTHONPATH="$TOP/python" python3 -c '
import sys, prefetchfs
seen = []
last = prefetchfs.warm(sys.argv[1], ["train"], progress=seen.append, program=sys.argv[2])
assert last["done"] and last["files"] == last["files_total"] == int(sys.argv[3]), last
assert seen and seen[-1] == last, seen' "$M" "$WARM" "$NTRAIN"
printf 'train/cls0\nval/shard.bin\n' >"$WORK/list"
"$WARM" -q "$M" @"$WORK/list" >"$WORK/6d.out" 2>&1
rc=$?
check "6. @LISTFILE: exit $rc $(cat "$WORK/6d.out")" test $rc -eq 0
pf_umount "$M" || fail "6. unmount"
finish
