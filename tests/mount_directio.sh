#!/bin/bash
# -o direct_io: the dataset's files served without the page cache.
#  1. over a directory and over nginx: byte-exact reads of every kind
#     (trainer read()s into a malloc()ed buffer, which come as READs
#     ending 16 bytes short of a MiB; dd bs=4k; strided ranks; 1000 random
#     preads; 4 readers at once);
#  2. nothing is pushed (push off, bytes_pushed 0, also with -o push=on),
#     and the page cache keeps nothing: a second read of a file reaches the
#     daemon again;
#  3. memory: blocks a sequential reader consumed go back to the pool (also
#     those the next file's read-ahead brought): after 4 x 32 MiB read one
#     after another nothing is in flight or ahead, what stays for re-read
#     is an eighth of it at most, and the daemon's peak RSS stays under
#     96 MiB;
#  4. mmap: MAP_PRIVATE reads byte-exact; MAP_SHARED fails with ENODEV
#     exactly when the daemon warned at mount that it cannot be allowed
#     (libfuse before 3.16), else reads byte-exact;
#  5. st_blksize is 1 MiB, so buffered small reads come as few READs; the
#     stats file reads as JSON; a plan (hints) is followed; the disk
#     cache fills, and serves a remount without a GET of file data;
#  6. a bad value of the option fails the mount with one line.
# Daemons run in the foreground (-f): their logs hold no error line but the
# mmap warning.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
. "$(dirname "$0")/objlib.sh"
need_fuse
need_tools "$HELPERS/randread" "$TRAINER" "$MKDATA"

MiB=1048576
SRC=$WORK/src
mkdir -p "$SRC/seq" "$SRC/rec"
mkfile "$SRC/big.bin" $((32 * MiB + 12345))
"$MKDATA" --seed 7 "$SRC/seq" 4 32M >/dev/null 2>&1 || fail "bench/mkdata"
for i in 0 1 2 3 4 5 6 7; do
	mkfile "$SRC/rec/r$i.bin" $((300000 + i))
done
TOTAL=$(find "$SRC" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
WARN='direct_io: shared mmap'

# ---- helpers --------------------------------------------------------------

# totals MNT KEY: one counter of the stats' totals
total() { stats_eval "$1" "t['$2']"; }

# four_readers MNT: the 4 files of seq/ at once, each with cmp
four_readers() {
	local i pids=() bad=0
	for i in 0 1 2 3; do
		cmp "$SRC/seq/file-00000$i.bin" "$1/seq/file-00000$i.bin" >"$WORK/conc.$i" 2>&1 &
		pids+=($!)
	done
	for i in 0 1 2 3; do
		wait "${pids[$i]}" || { bad=$((bad + 1)); cat "$WORK/conc.$i"; }
	done
	[ $bad -eq 0 ]
}

# all_reads TAG: byte-exact reads of every kind through $M
all_reads() {
	local tag=$1 spec r n l
	rc_check "[$tag] trainer read()s of 1 MiB into a malloc()ed buffer, byte-exact" \
		"$TRAINER" --batch 8M --compute-ms 0 --check "$SRC/big.bin" "$M/big.bin"
	rc_check "[$tag] dd bs=4k byte-exact (sha256)" \
		bash -c '[ "$(dd if="$1" bs=4k status=none | sha256sum)" = "$(sha256sum <"$2")" ]' _ \
		"$M/big.bin" "$SRC/big.bin"
	for spec in 1:4:1048576 2:5:12345; do
		IFS=: read -r r n l <<<"$spec"
		rc_check "[$tag] strided rank $r of $n, record $l, byte-exact" \
			"$TRAINER" --compute-ms 0 --batch 4M --read-size 256K \
			--stride $((n * l)) --record "$l" --offset $((r * l)) \
			--check "$SRC/big.bin" "$M/big.bin"
	done
	rc_check "[$tag] 1000 random preads of 1 B..1 MiB byte-exact" \
		"$HELPERS/randread" -s 31 -n 1000 -m $MiB "$M/big.bin" "$SRC/big.bin"
	rc_check "[$tag] 4 readers at once, byte-exact" four_readers "$M"
	rc_check "[$tag] small files byte-exact" \
		bash -c 'for f in "$1"/rec/*.bin; do cmp -s "$f" "$2/rec/${f##*/}" || exit 1; done' _ "$M" "$SRC"
}

# no_push TAG: nothing went to the page cache, and the page cache holds
# nothing of a file read: a second whole read of it comes as READs again
no_push() {
	local tag=$1 r0 r1
	stats_check "[$tag] stats: push is off, nothing pushed" "$M" \
		's["push"] is False and t["bytes_pushed"] == 0'
	r0=$(total "$M" reads)
	g cat "$M/seq/file-000000.bin" >/dev/null || fail "[$tag] cat"
	r1=$(total "$M" reads)
	echo "[$tag] READs of a second read of a 32 MiB file: $((r1 - r0))"
	check "[$tag] a file read again comes to the daemon again (>= 32 READs)" \
		test $((r1 - r0)) -ge 32
}

# mmaps TAG: MAP_PRIVATE byte-exact; MAP_SHARED as the log says
mmaps() {
	local tag=$1 log="$WORK/daemon.$(basename "$M").log" want=ok
	grep -q "$WARN" "$log" && want=ENODEV
	g python3 - "$M/big.bin" "$SRC/big.bin" >"$WORK/mmap.out" 2>&1 <<-'EOF'
	import errno, mmap, os, sys
	def mapped(path, flags):
	    fd = os.open(path, os.O_RDONLY)
	    try:
	        m = mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
	    except OSError as e:
	        return errno.errorcode[e.errno]
	    finally:
	        os.close(fd)
	    with open(sys.argv[2], "rb") as f:
	        ok = m[:] == f.read()
	    m.close()
	    return "ok" if ok else "differs"
	print("private", mapped(sys.argv[1], mmap.MAP_PRIVATE))
	print("shared", mapped(sys.argv[1], mmap.MAP_SHARED))
	EOF
	check "[$tag] MAP_PRIVATE mmap reads byte-exact" grep -qx 'private ok' "$WORK/mmap.out"
	check "[$tag] MAP_SHARED mmap: $want (the log $([ $want = ok ] || echo "warns")$([ $want = ok ] && echo "has no warning"))" \
		grep -qx "shared $want" "$WORK/mmap.out"
	cat "$WORK/mmap.out"
}

# ---- 1-5 over a directory -------------------------------------------------
M=$WORK/mnt-dir
pf_mount_ready "$SRC" "$M" -o direct_io,max_memory=512M || { fail "mount of the directory"; finish; }
ok "mounted $SRC with -o direct_io"
check "the log says once what shared mmap does with direct_io" \
	test "$(grep -c "$WARN" "$WORK/daemon.mnt-dir.log")" -le 1
all_reads dir
no_push dir
mmaps dir
check "the stats file reads as JSON" quiet stats_eval "$M" 't["reads"]'
# small buffered reads: st_blksize tells stdio and Python to read a MiB
check "[dir] st_blksize of a dataset file is 1 MiB" test "$(stat -c %o "$M/big.bin")" = 1048576
r0=$(total "$M" reads)
g python3 -c '
import sys
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "rb") as g:
    while True:
        b = f.read(1000)
        if b != g.read(1000):
            sys.exit("differs")
        if not b:
            break' "$M/seq/file-000001.bin" "$SRC/seq/file-000001.bin" || fail "[dir] Python reads of 1000 bytes differ"
r1=$(total "$M" reads)
check "[dir] Python's reads of 1000 bytes of a 32 MiB file came as $((r1 - r0)) READs (<= 80)" \
	test $((r1 - r0)) -le 80

# 5. a plan: the records of rec/ in a declared order, read as declared
g python3 - "$M" "$SRC" >"$WORK/plan.out" 2>&1 <<'EOF'
import json, os, sys, time
m, src = sys.argv[1:3]
order = [5, 2, 7, 0, 3, 6, 1, 4]
fd = os.open(m + "/.prefetchfs/plan", os.O_WRONLY)
os.write(fd, "".join("rec/r%d.bin\n" % i for i in order).encode())
# the follower fetches ahead of the reader: give it the time it needs on
# a loaded machine (a reader first would fetch every file itself)
for _ in range(400):
    with open(m + "/.prefetchfs/stats") as f:
        p = json.load(f)["plans"]
    p = p if isinstance(p, list) else p.get("active", [])
    if any(x.get("fetched", 0) > 0 for x in p):
        break
    time.sleep(0.05)
bad = 0
for i in order:
    with open("%s/rec/r%d.bin" % (m, i), "rb") as a, open("%s/rec/r%d.bin" % (src, i), "rb") as b:
        bad += a.read() != b.read()
with open(m + "/.prefetchfs/stats") as f:
    p = json.load(f)["plans"]
os.close(fd)
print("mismatches", bad)
print("plan", json.dumps(p))
EOF
cat "$WORK/plan.out"
check "[dir] files read in a planned order, byte-exact" grep -qx 'mismatches 0' "$WORK/plan.out"
check "[dir] the plan was followed: its READs counted as planned, its files fetched" \
	python3 -c '
import json, sys
p = json.loads(open(sys.argv[1]).read().split("plan ", 1)[1])
p = p if isinstance(p, list) else p.get("active", [])
sys.exit(not any(x.get("read_planned", 0) > 0 and x.get("fetched", 0) > 0 for x in p))' \
	"$WORK/plan.out"
pf_umount "$M"
clean_log "$M" "$WARN"

# ---- 3. memory, on a mount of its own --------------------------------------
M=$WORK/mnt-mem
pf_mount_ready "$SRC" "$M" -o direct_io,max_memory=512M || { fail "mount for the memory checks"; finish; }
for i in 0 1 2 3; do
	rc_check "[mem] trainer over seq/file-00000$i.bin, byte-exact" \
		"$TRAINER" --batch 8M --compute-ms 5 --check "$SRC/seq/file-00000$i.bin" "$M/seq/file-00000$i.bin"
done
echo "memory after 4 x 32 MiB read one after another (MiB): $(stats_eval "$M" '{k[7:]: t[k] >> 20 for k in t if k.startswith("memory_")}')"
stats_check "[mem] nothing in flight or ahead once the readers are done" "$M" \
	't["memory_inflight"] == 0 and t["memory_ahead"] == 0'
stats_check "[mem] what stays for re-read is an eighth of the 128 MiB read at most" "$M" \
	't["memory_used"] <= 16 << 20'
stats_check "[mem] a POSIX source says nothing of first bytes" "$M" \
	't["fetches"] > 0 and t["fetches_started"] == 0'
hwm=$(awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/$(cat "$WORK/pid.mnt-mem")/status")
if sanitized; then
	echo "peak RSS ${hwm} MiB (sanitizer build: not checked)"
else
	check "[mem] the daemon's peak RSS (${hwm} MiB) is under 96 MiB" \
		test "${hwm:-999999}" -lt 96
fi
pf_umount "$M"
clean_log "$M" "$WARN"

# ---- 6. a bad value --------------------------------------------------------
"$PF" -o direct_io=maybe "$SRC" "$WORK/mnt-bad" >"$WORK/bad.out" 2>&1
rc=$?
check "-o direct_io=maybe fails (exit $rc) with one line" \
	bash -c '[ "$1" -ne 0 ] && [ "$(wc -l <"$2")" -eq 1 ] && grep -q "bad value for direct_io" "$2"' _ $rc "$WORK/bad.out"
check "... and mounts nothing" bash -c '! mountpoint -q "$1"' _ "$WORK/mnt-bad"

# ---- 1, 2, 4, 5 over nginx, with push=on given too ------------------------
nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
CACHE=$WORK/cache
M=$WORK/mnt-http
pf_mount_ready "$NGINX_URL" "$M" -o push=on,direct_io,cache_dir=$CACHE,cache_size=256M ||
	{ fail "mount of $NGINX_URL"; finish; }
ok "mounted $NGINX_URL with -o push=on,direct_io,cache_dir"
all_reads http
no_push http
mmaps http
stats_check "[http] stats: no fetch errors" "$M" 't["fetch_errors"] == 0'
stats_check "[http] the store's first bytes reach the engine through the disk cache" "$M" \
	't["fetches_started"] > 0 and t["fetches_started"] <= t["fetches"]'
# the disk cache: written while reading (every file was read whole); a
# remount reads from it alone
for ((i = 0; i < 100; i++)); do
	[ "$(stats_eval "$M" "c['bytes_cached'] >= $TOTAL")" = True ] && break
	sleep 0.1
done
stats_check "[http] the disk cache holds every file read" "$M" "c['bytes_cached'] >= $TOTAL"
pf_umount "$M"
clean_log "$M" "$WARN"
gets() { grep -c '"GET /big.bin HTTP' "$NGINX_DIR/access.log"; }
before=$(gets)
pf_mount_ready "$NGINX_URL" "$M" -o direct_io,cache_dir=$CACHE,cache_size=256M ||
	{ fail "remount of $NGINX_URL"; finish; }
rc_check "[http] remount: big.bin byte-exact" cmp "$SRC/big.bin" "$M/big.bin"
check "[http] remount: big.bin read from the disk cache, no GET of it ($(($(gets) - before)))" \
	test "$(gets)" -eq "$before"
stats_check "[http] remount: disk cache hits" "$M" "c['hits'] > 0"
pf_umount "$M"
clean_log "$M" "$WARN"
finish
