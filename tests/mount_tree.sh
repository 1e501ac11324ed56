#!/bin/bash
# The mount mirrors the source tree: odd names, a deep tree, empty files,
# symlinks, a large directory, a sparse file over 4 GiB, sizes, modes and
# mtimes, the full `find` listing; the virtual .prefetchfs/stats; every way
# of changing the tree fails with EROFS; statfs works.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$MKDATA"

SRC=$WORK/src
MNT=$WORK/mnt
mkdir -p "$SRC"

# ---- the source tree --------------------------------------------------------
printf 'spaces\n' >"$SRC/name with  spaces.txt"
printf 'utf8\n' >"$SRC/ünïcödé-日本語-ñ.txt"
printf 'quote\n' >"$SRC/it's \"quoted\" & [x].txt"
printf 'dash\n' >"$SRC/-leading-dash"
mkdir -p "$SRC/dir with space/sub dir ✓"
printf 'nested\n' >"$SRC/dir with space/sub dir ✓/file ✓.bin"
: >"$SRC/empty"
M=$SRC/modes
mkdir -p "$M"
printf 'x' >"$M/ro-0444" && chmod 0444 "$M/ro-0444"
printf '#!/bin/sh\n' >"$M/exec-0755" && chmod 0755 "$M/exec-0755"
printf 'p' >"$M/private-0600" && chmod 0600 "$M/private-0600"
mkdir -m 0700 "$M/dir-0700"
touch -d '2001-02-03 04:05:06' "$SRC/empty"
chown 1234:5678 "$M/private-0600"

# names that need escaping in the stats' JSON: quote, backslash, tab,
# newline, a control character, and bytes that are not UTF-8
mkdir "$SRC/odd"
printf 'a' >"$SRC/odd/q\"uote\\back"$'\t'"tab"$'\n'"newline"
printf 'b' >"$SRC/odd/ctl"$'\x01'"-del"$'\x7f'
printf 'c' >"$SRC/odd/latin1-"$'\xe9\xff'

# 30 levels deep
deep=$SRC
for i in $(seq -w 1 30); do deep=$deep/level$i; done
mkdir -p "$deep"
printf 'at the bottom\n' >"$deep/leaf.txt"
DEEP_REL=${deep#"$SRC"/}

# symlinks: relative, absolute, dangling, to a directory
ln -s "name with  spaces.txt" "$SRC/link-rel"
ln -s "../ünïcödé-日本語-ñ.txt" "$SRC/dir with space/link-up"
ln -s "$SRC/empty" "$SRC/link-abs"
ln -s "does/not/exist" "$SRC/link-dangling"
ln -s "dir with space" "$SRC/link-dir"

# a directory of 2000 entries
mkdir "$SRC/big"
(cd "$SRC/big" && seq -f 'entry-%05g' 1 2000 | xargs touch)

# a sparse 5 GiB file with data near 4.5 GiB
SPARSE_OFF=$((4608 * 1024 * 1024 + 12345))	# 4.5 GiB + a bit, unaligned
truncate -s 5G "$SRC/sparse.bin"
head -c 100000 /dev/urandom >"$WORK/sparse-payload"
dd if="$WORK/sparse-payload" of="$SRC/sparse.bin" bs=100000 seek="$SPARSE_OFF" \
	oflag=seek_bytes conv=notrunc status=none

# a few data files
"$MKDATA" "$SRC/data" 3 3M >/dev/null 2>&1 || fail "bench/mkdata"
head -c 1234567 /dev/urandom >"$SRC/data/odd-size.bin"

pf_mount "$SRC" "$MNT" || { fail "mount"; finish; }
ok "mounted"

# ---- listing and attributes ------------------------------------------------
# every entry with type, permissions, mtime, size (not of directories:
# theirs is the source filesystem's business) and path
listing() {
	(cd "$1" && find . \( -type d -printf '%y %m %U:%G %T@ - %p\n' \) -o \
		-printf '%y %m %U:%G %T@ %s %p\n' | LC_ALL=C sort)
}
listing "$SRC" >"$WORK/list.src"
listing "$MNT" >"$WORK/list.mnt"
if cmp -s "$WORK/list.src" "$WORK/list.mnt"; then
	ok "find listing (types, modes, owners, mtimes, sizes) equals the source's ($(wc -l <"$WORK/list.src") entries)"
else
	fail "find listing differs from the source's"
	diff "$WORK/list.src" "$WORK/list.mnt" | head -20
fi

(cd "$SRC" && find . -print0 | LC_ALL=C sort -z) >"$WORK/names.src"
(cd "$MNT" && find . -print0 | LC_ALL=C sort -z) >"$WORK/names.mnt"
check "find names (NUL-separated) identical" cmp -s "$WORK/names.src" "$WORK/names.mnt"

for f in "name with  spaces.txt" "ünïcödé-日本語-ñ.txt" "it's \"quoted\" & [x].txt" \
	"-leading-dash" "dir with space/sub dir ✓/file ✓.bin"; do
	check "content of '$f'" cmp -s "$SRC/$f" "$MNT/$f"
done
check "file 30 directories deep readable" cmp -s "$SRC/$DEEP_REL/leaf.txt" "$MNT/$DEEP_REL/leaf.txt"
check "30 levels of directories" test "$(cd "$MNT" && find . -path "./level01*" -type d | wc -l)" -eq 30

check "empty file has size 0" test "$(stat -c %s "$MNT/empty")" -eq 0
check "empty file reads as empty" test "$(head -c 10 "$MNT/empty" | wc -c)" -eq 0
check "mtime of empty file kept" test "$(stat -c %Y "$MNT/empty")" -eq "$(stat -c %Y "$SRC/empty")"

for f in modes/ro-0444 modes/exec-0755 modes/private-0600 modes/dir-0700; do
	check "mode of $f is $(stat -c %a "$SRC/$f")" \
		test "$(stat -c %a:%F "$MNT/$f")" = "$(stat -c %a:%F "$SRC/$f")"
done

# ---- symlinks ----------------------------------------------------------------
for l in link-rel "dir with space/link-up" link-abs link-dangling link-dir; do
	check "readlink $l" test "$(readlink "$MNT/$l")" = "$(readlink "$SRC/$l")"
	check "$l is a symlink" test -L "$MNT/$l"
done
check "relative symlink resolves inside the mount" cmp -s "$MNT/link-rel" "$SRC/name with  spaces.txt"
check "symlink to ../ resolves inside the mount" cmp -s "$MNT/dir with space/link-up" "$SRC/ünïcödé-日本語-ñ.txt"
check "symlink to a directory can be walked" test -f "$MNT/link-dir/sub dir ✓/file ✓.bin"
check "dangling symlink: stat -L fails" bash -c '! stat -L "$1" >/dev/null 2>&1' _ "$MNT/link-dangling"

# ---- the big directory -------------------------------------------------------
check "ls of a 2000-entry directory lists 2000" test "$(ls "$MNT/big" | wc -l)" -eq 2000
check "ls -a lists 2002 (with . and ..)" test "$(ls -a "$MNT/big" | wc -l)" -eq 2002
check "ls -l of the big directory works" bash -c '[ "$(ls -l "$1" | grep -c "^-")" -eq 2000 ]' _ "$MNT/big"
check "names in the big directory identical" \
	bash -c 'diff <(ls "$1") <(ls "$2") >/dev/null' _ "$SRC/big" "$MNT/big"
check "stat of a late entry" quiet stat "$MNT/big/entry-01999"

# ---- the sparse file ---------------------------------------------------------
check "sparse file size is 5 GiB" test "$(stat -c %s "$MNT/sparse.bin")" -eq $((5 << 30))
dd if="$MNT/sparse.bin" of="$WORK/sparse-back" bs=100000 skip="$SPARSE_OFF" count=1 \
	iflag=skip_bytes status=none
check "bytes at 4.5 GiB read back byte-exact" cmp -s "$WORK/sparse-payload" "$WORK/sparse-back"
dd if="$MNT/sparse.bin" of="$WORK/sparse-hole" bs=65536 skip=$(((4 << 30) + 4096)) count=1 \
	iflag=skip_bytes status=none
check "a hole past 4 GiB reads as zeros" cmp -s "$WORK/sparse-hole" <(head -c 65536 /dev/zero)
dd if="$MNT/sparse.bin" of="$WORK/sparse-tail" bs=4096 skip=$(((5 << 30) - 1000)) \
	iflag=skip_bytes status=none
check "the last 1000 bytes of the 5 GiB file" test "$(stat -c %s "$WORK/sparse-tail")" -eq 1000

# ---- data files ----------------------------------------------------------------
for f in "$SRC"/data/*; do
	check "content of data/$(basename "$f")" cmp -s "$f" "$MNT/data/$(basename "$f")"
done

# ---- the virtual stats -------------------------------------------------------
check ".prefetchfs not listed by ls -a of the root" \
	bash -c '! ls -a "$1" | grep -qx ".prefetchfs"' _ "$MNT"
check ".prefetchfs not in find" bash -c '! grep -q prefetchfs "$1"' _ "$WORK/list.mnt"
check "stat .prefetchfs is a directory" test -d "$MNT/.prefetchfs"
check "ls .prefetchfs lists stats" test "$(ls "$MNT/.prefetchfs")" = stats
check "cat .prefetchfs/stats works" bash -c 'cat "$1/.prefetchfs/stats" >"$2"' _ "$MNT" "$WORK/stats.json"
check "stats are valid JSON (python3 -m json.tool)" quiet python3 -m json.tool "$WORK/stats.json"
stats_check "stats have totals and streams" "$WORK/stats.json" \
	'"totals" in s and isinstance(s["streams"], list) and "bytes_served" in t'
check "stats again (fresh contents each open)" bash -c 'cat "$1/.prefetchfs/stats" | python3 -m json.tool >/dev/null' _ "$MNT"

# the streams of files with odd names, read just now, are in the stats
(cd "$MNT/odd" && find . -type f -print0 | xargs -0 cat) >/dev/null
cat "$MNT/.prefetchfs/stats" >"$WORK/stats-odd.json"
# (stats_check parses strict UTF-8 JSON, else fails)
stats_check "stats are valid JSON (strict UTF-8) after reading files with odd names" \
	"$WORK/stats-odd.json" 'True'
stats_check "stats name the files with quote, backslash, tab, newline, control characters" \
	"$WORK/stats-odd.json" \
	'{"odd/q\"uote\\back\ttab\nnewline", "odd/ctl\x01-del\x7f"} <= {x["file"] for x in s["streams"]}'

# ---- read-only -----------------------------------------------------------------
# erofs WHAT COMMAND...: COMMAND fails and says "Read-only file system"
erofs() {
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then
		fail "$what succeeded on the read-only mount"
	elif ! grep -q "Read-only file system" <<<"$out"; then
		fail "$what: expected 'Read-only file system', got: $out"
	else
		ok "$what -> EROFS"
	fi
}
F="$MNT/data/file-000000.bin"
erofs "create (touch new)" touch "$MNT/newfile"
erofs "create (redirect)" bash -c 'echo x >"$1"' _ "$MNT/newfile2"
erofs "open O_WRONLY an existing file" \
	python3 -c 'import os,sys
try:
    os.open(sys.argv[1], os.O_WRONLY)
except OSError as e:
    sys.exit(os.strerror(e.errno))' "$F"
erofs "open O_RDWR an existing file" \
	python3 -c 'import os,sys
try:
    os.open(sys.argv[1], os.O_RDWR)
except OSError as e:
    sys.exit(os.strerror(e.errno))' "$F"
erofs "write to an existing file (dd conv=notrunc)" \
	dd if=/dev/zero of="$F" bs=1 count=1 conv=notrunc status=none
erofs "append (>>)" bash -c 'echo x >>"$1"' _ "$F"
erofs "mkdir" mkdir "$MNT/newdir"
erofs "rm" rm -f "$F"
erofs "rmdir" rmdir "$MNT/modes/dir-0700"
erofs "mv" mv "$F" "$MNT/data/renamed"
erofs "chmod" chmod 0600 "$F"
erofs "chown" chown 1:1 "$F"
erofs "touch an existing file" touch "$F"
erofs "truncate" truncate -s 0 "$F"
erofs "ln -s" ln -s x "$MNT/newlink"
erofs "ln (hard link)" ln "$F" "$MNT/hardlink"
erofs "mkfifo" mkfifo "$MNT/fifo"
erofs "setfattr" python3 -c 'import os,sys
try:
    os.setxattr(sys.argv[1], "user.x", b"1")
except OSError as e:
    sys.exit(os.strerror(e.errno))' "$F"
listing "$SRC" >"$WORK/list.src2"
check "the source is unchanged by all that" cmp -s "$WORK/list.src" "$WORK/list.src2"
check "file still intact" cmp -s "$SRC/data/file-000000.bin" "$F"

# ---- statfs ----------------------------------------------------------------------
check "df works on the mount" quiet df "$MNT"
check "df -i works on the mount" quiet df -i "$MNT"
check "statfs block size and total blocks equal the source's" \
	test "$(stat -f -c '%S %b %c' "$MNT")" = "$(stat -f -c '%S %b %c' "$SRC")"
# the daemon raises the mount's read-ahead (default 1024 KiB)
check "read_ahead_kb of the mount is 1024 (the default)" \
	test "$(cat "/sys/class/bdi/$(mountpoint -d "$MNT")/read_ahead_kb" 2>&1)" = 1024
M2=$WORK/mnt-ra
if pf_mount "$SRC" "$M2" -o readahead_kb=256; then
	check "-o readahead_kb=256 sets read_ahead_kb to 256" \
		test "$(cat "/sys/class/bdi/$(mountpoint -d "$M2")/read_ahead_kb" 2>&1)" = 256
	pf_umount "$M2"
else
	fail "mount with -o readahead_kb=256"
fi
# not an "ro" mount (the hint control file is written), but every change
# of the tree is refused
check "the mount refuses a new file with EROFS" \
	python3 -c 'import errno, os, sys
try:
    open(sys.argv[1] + "/new-file", "w")
except OSError as e:
    sys.exit(e.errno != errno.EROFS)
sys.exit(1)' "$MNT"

finish
