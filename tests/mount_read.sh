#!/bin/bash
# Byte-exact reads through the mount: sequential (cat, 4 KiB dd), random
# preads, strided ranks with unaligned records, 8 concurrent readers,
# threads sharing one fd, mmap, 2000 small files open at once; with the
# default options, a cache much smaller than the data, io=pread and
# prefetch=off.  Several READs of one block in flight at once.  A file
# rewritten in the source between opens (cache_timeout=0): the new bytes
# are served, never a mix.  A file that shrank in the source, opened again
# with the default cache_timeout: no bytes past its new end.
#
# The daemon lets the kernel keep a file's page cache across opens, so the
# page cache of a file is evicted before each check that must reach the
# daemon.  A reader that hangs is stopped after 30 s by killing the daemon
# (see guard in lib.sh); the mount is then made again for the next checks.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$HELPERS/randread" "$HELPERS/mmapread" "$HELPERS/threadread" \
	"$HELPERS/blockrace" "$TRAINER" "$MKDATA"

SRC=$WORK/src
mkdir -p "$SRC"
# big.bin: 64 MiB + 12345 bytes (the last block is partial);
# seq/file-00000{0..9}.bin: 16 MiB each.  224 MiB in all.
"$MKDATA" --seed 7 "$WORK/gen" 1 65M >/dev/null 2>&1 || fail "bench/mkdata"
mv "$WORK/gen/file-000000.bin" "$SRC/big.bin"
truncate -s $((64 * 1024 * 1024 + 12345)) "$SRC/big.bin"
"$MKDATA" "$SRC/seq" 10 16M >/dev/null 2>&1 || fail "bench/mkdata"
BIG=big.bin
# many small files (1 byte to 128 KiB), as datasets of samples have
mkdir -p "$SRC/small"
python3 - "$SRC/small" <<'PY'
import os, random, sys
random.seed(4)
for i in range(2000):
    with open(os.path.join(sys.argv[1], "s%05d" % i), "wb") as f:
        f.write(random.randbytes(random.choice([1, 4095, 4096, 65537]) if i % 10 == 0
                                 else random.randrange(1, 131072)))
PY

# Every reader runs under guard: one that hangs on the daemon of the
# current mount $M fails its check, and the daemon is killed.
g() { guard "$M" 30 "$@"; }

# rc_check WHAT LOGFILE COMMAND...: run COMMAND (output to LOGFILE), check
# it exits 0; print the log on failure
rc_check() {
	local what=$1 log=$2 rc
	shift 2
	g "$@" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$what"
	else
		fail "$what (exit $rc$([ $rc -eq 124 ] && echo ': HANG, daemon killed'))"
		head -20 "$log"
		[ $rc -eq 124 ] && remount
	fi
}

# After a hang killed the daemon of $M: mount it again ($MOPTS are the
# options of the current section) so that the other checks still run.
remount() {
	echo "  (mounting $M again to go on)"
	pf_mount "${MSRC:-$SRC}" "$M" "${MOPTS[@]}" || fail "mount $M again"
}

# The daemon lets the kernel keep a file's pages across opens: evict them
# before each check, so that the check reads through the daemon.
drop() { g drop_page_cache "$@" || fail "evict the page cache of $*"; }

# sequential and random byte-exact reads of big.bin on mount $2
basic_reads() {
	local tag=$1 mnt=$2
	drop "$mnt/$BIG"
	rc_check "[$tag] random preads of 1 B..1 MiB" "$WORK/rr.$tag.log" \
		"$HELPERS/randread" -s 11 -n 1500 -m $((1 << 20)) "$mnt/$BIG" "$SRC/$BIG"
	drop "$mnt/$BIG"
	rc_check "[$tag] random small preads of 1 B..8 KiB" "$WORK/rr2.$tag.log" \
		"$HELPERS/randread" -s 12 -n 3000 -m 8192 "$mnt/$BIG" "$SRC/$BIG"
	drop "$mnt/$BIG"
	rc_check "[$tag] sequential cat byte-exact (cmp)" "$WORK/cat.$tag.log" \
		cmp "$SRC/$BIG" "$mnt/$BIG"
	drop "$mnt/$BIG"
	rc_check "[$tag] sequential dd bs=4k byte-exact (sha256)" "$WORK/dd4k.$tag.log" \
		bash -c '[ "$(dd if="$1" bs=4k status=none | sha256sum)" = "$(sha256sum <"$2")" ]' _ \
		"$mnt/$BIG" "$SRC/$BIG"
	rc_check "[$tag] sequential dd bs=1M of a 16 MiB file (sha256)" "$WORK/dd1m.$tag.log" \
		bash -c '[ "$(dd if="$1" bs=1M status=none | sha256sum)" = "$(sha256sum <"$2")" ]' _ \
		"$mnt/seq/file-000009.bin" "$SRC/seq/file-000009.bin"
}

# strided ranks: --offset r*L --stride N*L --record L
strided_reads() {
	local tag=$1 mnt=$2 spec r n l
	for spec in 1:4:1048576 0:3:100000 2:5:12345 7:8:65537 3:4:4096 1:2:3000000; do
		IFS=: read -r r n l <<<"$spec"
		drop "$mnt/$BIG"
		rc_check "[$tag] strided rank $r of $n, record $l" "$WORK/str.$tag.$r.$n.log" \
			"$TRAINER" --compute-ms 0 --batch 4M --read-size 256K \
			--stride $((n * l)) --record "$l" --offset $((r * l)) \
			--check "$SRC/$BIG" "$mnt/$BIG"
	done
}

# 8 readers at once: 4 whole files, 4 quarters of another file
eight_readers() {
	local tag=$1 mnt=$2 i pids=() f q
	for i in 0 1 2 3; do
		f=seq/file-00000$i.bin
		( cmp "$SRC/$f" "$mnt/$f" >"$WORK/conc.$tag.$i" 2>&1
		  echo "rc=$?" >>"$WORK/conc.$tag.$i" ) &
		pids+=($!)
	done
	for q in 0 1 2 3; do
		f=seq/file-000004.bin
		( a=$(dd if="$mnt/$f" bs=1M skip=$((q * 4)) count=4 status=none | sha256sum)
		  b=$(dd if="$SRC/$f" bs=1M skip=$((q * 4)) count=4 status=none | sha256sum)
		  [ "$a" = "$b" ]; echo "rc=$?" >"$WORK/conc.$tag.q$q" ) &
		pids+=($!)
	done
	wait "${pids[@]}"
}
concurrent_reads() {
	local tag=$1 mnt=$2 i q
	rm -f "$WORK/conc.$tag."*
	drop "$mnt"/seq/file-00000[0-4].bin
	if ! g eight_readers "$tag" "$mnt"; then
		fail "[$tag] 8 concurrent readers: HANG, daemon killed"
		remount
	fi
	for i in 0 1 2 3; do
		check "[$tag] concurrent reader of file $i byte-exact" grep -qx 'rc=0' "$WORK/conc.$tag.$i"
	done
	for q in 0 1 2 3; do
		check "[$tag] concurrent reader of quarter $q of file 4 byte-exact" grep -qx 'rc=0' "$WORK/conc.$tag.q$q"
	done
}

# 2000 small files open at once, then each read and compared
many_files() {
	local tag=$1 mnt=$2
	drop "$mnt"/small/*
	rc_check "[$tag] 2000 small files open at once, all byte-exact" "$WORK/many.$tag.log" \
		python3 - "$mnt/small" "$SRC/small" <<'PY'
import os, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
names = sorted(os.listdir(sys.argv[2]))
fds = [os.open(os.path.join(sys.argv[1], n), os.O_RDONLY) for n in names]
bad = 0
for n, fd in zip(reversed(names), reversed(fds)):
    want = open(os.path.join(sys.argv[2], n), "rb").read()
    got = b""
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        got += b
    if got != want:
        print("mismatch:", n, len(got), len(want))
        bad += 1
for fd in fds:
    os.close(fd)
print("files=%d mismatches=%d" % (len(names), bad))
sys.exit(1 if bad or len(names) != 2000 else 0)
PY
}

# threads sharing one fd, mmap
shared_reads() {
	local tag=$1 mnt=$2
	drop "$mnt"/seq/file-00000[5-8].bin "$mnt/$BIG"
	rc_check "[$tag] 8 threads, one fd, interleaved 128 KiB preads" "$WORK/thr1.$tag.log" \
		"$HELPERS/threadread" -t 8 -c 131072 -m seq "$mnt/seq/file-000005.bin" "$SRC/seq/file-000005.bin"
	rc_check "[$tag] 6 threads, one fd, interleaved unaligned 100003-byte preads" "$WORK/thr2.$tag.log" \
		"$HELPERS/threadread" -t 6 -c 100003 -m seq "$mnt/seq/file-000006.bin" "$SRC/seq/file-000006.bin"
	rc_check "[$tag] 4 threads, one fd, random 64 KiB preads" "$WORK/thr3.$tag.log" \
		"$HELPERS/threadread" -t 4 -c 65536 -m rand -n 400 "$mnt/seq/file-000007.bin" "$SRC/seq/file-000007.bin"
	rc_check "[$tag] mmap: sequential and random page touches" "$WORK/mmap.$tag.log" \
		"$HELPERS/mmapread" -s 5 -n 2000 "$mnt/seq/file-000008.bin" "$SRC/seq/file-000008.bin"
	rc_check "[$tag] mmap of the file with a partial last page" "$WORK/mmap2.$tag.log" \
		"$HELPERS/mmapread" -s 6 -n 500 "$mnt/$BIG" "$SRC/$BIG"
}

# ---- default options ------------------------------------------------------------
M=$WORK/mnt-default
MOPTS=()
pf_mount "$SRC" "$M" || { fail "mount (default options)"; finish; }
ok "mounted with default options"
basic_reads default "$M"
strided_reads default "$M"
concurrent_reads default "$M"
shared_reads default "$M"
many_files default "$M"
pf_umount "$M"

# ---- a cache much smaller than the data: constant eviction -------------------
M=$WORK/mnt-small
MOPTS=(-o max_memory=16M)
pf_mount "$SRC" "$M" "${MOPTS[@]}" || { fail "mount (max_memory=16M)"; finish; }
ok "mounted with max_memory=16M"
basic_reads small-cache "$M"
strided_reads small-cache "$M"
concurrent_reads small-cache "$M"
shared_reads small-cache "$M"
many_files small-cache "$M"
pf_umount "$M"

# ---- io=pread, prefetch=off -----------------------------------------------------
M=$WORK/mnt-pread
MOPTS=(-o io=pread)
pf_mount "$SRC" "$M" "${MOPTS[@]}" || { fail "mount (io=pread)"; finish; }
check "io=pread: stats name the pread engine" \
	bash -c 'grep -q "\"backend\": \"[^\"]*pread" "$1/.prefetchfs/stats"' _ "$M"
basic_reads io=pread "$M"
pf_umount "$M"

M=$WORK/mnt-noprefetch
MOPTS=(-o prefetch=off)
pf_mount "$SRC" "$M" "${MOPTS[@]}" || { fail "mount (prefetch=off)"; finish; }
basic_reads prefetch=off "$M"
check "prefetch=off: stats say prefetch false, nothing prefetched" \
	bash -c 'cat "$1/.prefetchfs/stats" | python3 -c "import json,sys; s=json.load(sys.stdin); assert s[\"prefetch\"] is False and s[\"totals\"][\"bytes_prefetched\"] == 0, s[\"totals\"]"' _ "$M"
pf_umount "$M"

# ---- several READs of one block at once -------------------------------------
# Threads read disjoint pages of the same 64 KiB block at the same moment,
# so the daemon has READs for different parts of one block in flight
# together.  A fresh mount each, since a hang kills the daemon.
M=$WORK/mnt-race1
MOPTS=()
pf_mount "$SRC" "$M" || fail "mount (race 1)"
# (a 64-block run takes well under a second)
rc_check "2 threads read disjoint pages of one block at once (fadvise RANDOM)" "$WORK/race1.log" \
	guard "$M" 15 "$HELPERS/blockrace" -t 2 -n 256 -s 65536 "$M/seq/file-000001.bin" "$SRC/seq/file-000001.bin"
pf_umount "$M"
M=$WORK/mnt-race2
pf_mount "$SRC" "$M" || fail "mount (race 2)"
rc_check "4 threads read disjoint pages of one block at once (O_DIRECT)" "$WORK/race2.log" \
	guard "$M" 15 "$HELPERS/blockrace" -t 4 -d -n 256 -s 65536 "$M/seq/file-000002.bin" "$SRC/seq/file-000002.bin"
pf_umount "$M"

# ---- a file rewritten in the source between opens -------------------------------
CH=$WORK/changing
mkdir -p "$CH"
M=$WORK/mnt-changing
head -c $((5 * 1048576 + 777)) /dev/urandom >"$WORK/v1"
head -c $((3 * 1048576 + 5)) /dev/urandom >"$WORK/v2"
head -c $((9 * 1048576 + 3)) /dev/urandom >"$WORK/v3"
head -c $((9 * 1048576 + 3)) /dev/urandom >"$WORK/v4"	# same size as v3
head -c $((7 * 1048576)) /dev/urandom >"$WORK/v5"
cp "$WORK/v1" "$CH/f.bin"
MOPTS=(-o cache_timeout=0)
MSRC=$CH
pf_mount "$CH" "$M" "${MOPTS[@]}" || { fail "mount (cache_timeout=0)"; finish; }

# read_whole VERSION STEP: the mount serves exactly VERSION's bytes
read_whole() {
	local v=$1 what=$2
	if g cmp -s "$M/f.bin" "$WORK/$v"; then
		ok "changing file: $what: the new bytes are served"
	elif cmp -s "$M/f.bin" "$WORK/$PREV"; then
		fail "changing file: $what: the OLD content is still served"
	else
		fail "changing file: $what: neither old nor new content (size $(stat -c %s "$M/f.bin"), expected $(stat -c %s "$WORK/$v")); first difference: $(cmp "$M/f.bin" "$WORK/$v" 2>&1)"
	fi
	check "changing file: $what: stat size $(stat -c %s "$WORK/$v")" \
		test "$(stat -c %s "$M/f.bin")" -eq "$(stat -c %s "$WORK/$v")"
	PREV=$v
}
PREV=v1
check "changing file: first version read" g cmp -s "$M/f.bin" "$WORK/v1"
# prefix of it again through the cache, so that its blocks are cached
g head -c 1000000 "$M/f.bin" >/dev/null
past_mtime "$CH/f.bin"	# a new mtime whatever the timestamp granularity
cat "$WORK/v2" >"$CH/f.bin"	# in place: same inode, shorter
read_whole v2 "rewritten in place, shorter"
past_mtime "$CH/f.bin"
cat "$WORK/v3" >"$CH/f.bin"	# in place, longer
read_whole v3 "rewritten in place, longer"
past_mtime "$CH/f.bin"
cat "$WORK/v4" >"$CH/f.bin"	# in place, same size, other bytes
read_whole v4 "rewritten in place, same size"
past_mtime "$CH/f.bin"
cp "$WORK/v5" "$CH/f.bin.tmp" && mv "$CH/f.bin.tmp" "$CH/f.bin"	# new inode
read_whole v5 "replaced by rename"
check "changing file: random reads of the last version" quiet g \
	"$HELPERS/randread" -s 3 -n 300 -m 300000 "$M/f.bin" "$WORK/v5"

# the same at once: read the old version sequentially (read-ahead, pushed
# to the page cache), rewrite it in place, open and read it again at once
"$MKDATA" --seed 21 "$WORK/old" 1 64M >/dev/null 2>&1
"$MKDATA" --seed 22 "$WORK/new" 1 48M >/dev/null 2>&1
mixed=0
for i in 1 2 3 4 5 6; do
	cp "$WORK/old/file-000000.bin" "$CH/r.bin"
	g cat "$M/r.bin" >/dev/null
	head -c $((40 * 1048576 + i * 4096)) "$WORK/new/file-000000.bin" >"$WORK/new.bin"
	cat "$WORK/new.bin" >"$CH/r.bin"
	if ! g cmp "$M/r.bin" "$WORK/new.bin" >"$WORK/rapid.out" 2>&1; then
		mixed=$((mixed + 1))
		echo "  round $i: $(cat "$WORK/rapid.out")"
	fi
done
check "changing file: reopened at once after a rewrite, 6 times: only new bytes" test $mixed -eq 0
pf_umount "$M"

# ---- a file that shrank in the source, default cache_timeout ----------------
# The kernel still has the old size when the file is opened again.  Two
# threads read at once near the new end: one a range across it, one a range
# wholly past it.  The first must get the bytes up to the new end and no
# more; bytes past the end (zeros) are wrong data.  20 rounds.
SH=$WORK/shrinking
mkdir -p "$SH"
M=$WORK/mnt-shrinking
MOPTS=()
MSRC=$SH
pf_mount "$SH" "$M" || fail "mount (shrinking file)"
rc_check "shrunk file read near its new end: no bytes past the new end (20 rounds)" "$WORK/shrink.log" \
	python3 - "$SH" "$M" 20 <<'PY'
import os, sys, threading
src, mnt, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
MiB, K = 1 << 20, 1 << 10
bad = 0
for i in range(rounds):
    name = "s%03d.bin" % i
    old, new = os.urandom(4 * MiB), os.urandom(MiB)
    with open(os.path.join(src, name), "wb") as f:
        f.write(old)
    with open(os.path.join(mnt, name), "rb") as f:
        if f.read() != old:
            sys.exit("first version not read back")
    with open(os.path.join(src, name), "r+b") as f:    # in place
        f.truncate(0)
        f.write(new)
    fd = os.open(os.path.join(mnt, name), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # READs as asked
    res = {}
    bar = threading.Barrier(2)
    def rd(k, off, n):
        bar.wait()
        res[k] = os.pread(fd, n, off)
    ts = [threading.Thread(target=rd, args=(0, MiB - 128 * K, 256 * K)),
          threading.Thread(target=rd, args=(1, MiB + 512 * K, 256 * K))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os.close(fd)
    if res[0] != new[-128 * K:] or res[1] != b"":
        bad += 1
        tail = res[0][128 * K:]
        print("round %d: read of [1M-128K, 1M+128K) returned %d bytes (want %d: the new end is at 1 MiB)%s; read at 1M+512K returned %d" % (
            i, len(res[0]), 128 * K,
            ", the %d past the end all zeros" % len(tail) if tail and tail == bytes(len(tail)) else "",
            len(res[1])))
print("rounds=%d bad=%d" % (rounds, bad))
sys.exit(1 if bad else 0)
PY
pf_umount "$M"

finish
