#!/bin/bash
# tests/run: parallel
# The disk cache's directory is the daemon's own, on a machine shared with
# another user (issue 28).  Run as root, the other user is nobody:
#   1. a 0600 file read through the mount: cache_dir is 0700 and every file
#      in it 0600; nobody finds none of the file's bytes there
#   2. a cache_dir owned by nobody, or writable by others: refused with one
#      line that says why, nothing written into it
#   3. a symlink planted for every name the cache uses (by nobody in a
#      directory of nobody's, by root in root's): the mount is refused or
#      the link is removed; the files the links name keep bytes and sizes
#   4. a cached block rewritten and its journal record fixed up by someone
#      without the key: the remount serves the source's bytes
#   5. a POSIX file rewritten with its size and mtime restored (touch -d):
#      the remount serves the new bytes; so does the next open in a mount
#   6. a read-only cache_dir: refused with one line
# With PF_BIN=<a build before issue 28> sections 1-5 fail.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools
if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
	echo "needs root and the user nobody"
	exit 77
fi
# nobody may pass through $WORK, not list it
chmod 711 "$WORK"
PUB=$WORK/pub
mkdir -m 755 "$PUB"
SRC=$WORK/src
M=$WORK/mnt
mkdir -p "$SRC"
MARK="TOP-SECRET-$$-$RANDOM"
{ echo "$MARK"; head -c $((1 << 20)) /dev/urandom; } >"$SRC/secret.bin"
chmod 600 "$SRC/secret.bin"
SECRET_SIZE=$(stat -c %s "$SRC/secret.bin")
as_nobody() { runuser -u nobody -- "$@"; }

# refused CACHE_DIR OUT: a mount with CACHE_DIR fails with one line in OUT
refused() {
	local m=$WORK/mnt_refused
	mkdir -p "$m"
	"$PF" -o "cache_dir=$1,cache_size=16M" "$SRC" "$m" >"$2" 2>&1 &&
		{ fusermount3 -u "$m"; return 1; }
	! mountpoint -q "$m" && one_line_err "$2"
}

# ---- 1. modes, and nobody's grep ---------------------------------------------

C1=$PUB/cache
pf_mount_ready "$SRC" "$M" -o "cache_dir=$C1,cache_size=16M" || { fail "mount"; finish; }
check "1. root reads the 0600 file byte-exact" cmp -s "$SRC/secret.bin" "$M/secret.bin"
check "1. its blocks are in the cache" wait_cached "$M" "$SECRET_SIZE"
pf_umount "$M" || fail "unmount"
check "1. the cache holds the file's bytes (root's grep finds them)" quiet grep -a -q "$MARK" "$C1/data"
check "1. cache_dir is 0700 ($(stat -c %a "$C1"))" [ "$(stat -c %a "$C1")" = 700 ]
for f in data journal lock key; do
	m=$(stat -c %a "$C1/$f" 2>/dev/null)
	check "1. $f is 0600 ($m)" [ "$m" = 600 ]
done
check "1. nobody's grep finds none of the file's bytes" \
	eval "! as_nobody grep -a -q '$MARK' '$C1/data' 2>/dev/null"
check "1. nobody cannot list cache_dir" eval "! as_nobody ls '$C1' >/dev/null 2>&1"

# ---- 2. a directory of nobody's, a directory anyone may write --------------

C2=$PUB/nobodys
mkdir "$C2"
chown nobody "$C2"
check "2. a cache_dir owned by nobody: refused, one line" refused "$C2" "$WORK/out2"
check "2. the line says why" grep -q "owned by uid 65534" "$WORK/out2"
check "2. nothing written into it" [ -z "$(ls -A "$C2")" ]
cat "$WORK/out2"
C2W=$PUB/anyones
mkdir "$C2W"
chmod 777 "$C2W"
check "2. a cache_dir writable by others: refused, one line" refused "$C2W" "$WORK/out2w"
check "2. the line says why" grep -q "writable by other users" "$WORK/out2w"
check "2. nothing written into it" [ -z "$(ls -A "$C2W")" ]
cat "$WORK/out2w"

# ---- 3. planted symlinks -------------------------------------------------------

T=$WORK/targets
mkdir -p "$T"
NAMES="lock key data journal journal.tmp key.tmp"
for n in $NAMES listings; do
	head -c 1000 /dev/urandom >"$T/$n"
	chmod 600 "$T/$n"
done
sha256sum "$T"/* >"$WORK/targets.sum"
targets_intact() {
	sha256sum --quiet -c "$WORK/targets.sum" &&
		[ "$(stat -c %s "$T"/* | sort -u)" = 1000 ]
}

# (a) as in the issue: nobody plants every name in a directory of its own
C3=$PUB/planted
mkdir "$C3"
chown nobody "$C3"
for n in $NAMES; do
	as_nobody ln -s "$T/$n" "$C3/$n"
done
check "3a. nobody's links in nobody's directory: refused" refused "$C3" "$WORK/out3a"
check "3a. the files the links name are intact" targets_intact

# (b) root's own 0700 directory with one link in it: the names the mount
# keeps are refused, the temporary ones removed
for n in $NAMES; do
	d=$WORK/c3-$n
	mkdir -m 700 "$d"
	ln -s "$T/$n" "$d/$n"
	case $n in
	*.tmp)
		pf_mount_ready "$SRC" "$M" -o "cache_dir=$d,cache_size=16M" || { fail "3b. mount with $n a link"; continue; }
		check "3b. $n a link: byte-exact" cmp -s "$SRC/secret.bin" "$M/secret.bin"
		pf_umount "$M" || fail "unmount"
		check "3b. $n a link: removed, not followed" [ ! -L "$d/$n" ]
		;;
	*)
		check "3b. $n a link: refused, one line" refused "$d" "$WORK/out3b"
		check "3b. $n a link: the line says so" grep -q "'$n' is a symlink" "$WORK/out3b"
		;;
	esac
done
check "3b. the files the links name are intact" targets_intact

# (c) the listings file of an http source (kept in cache_dir)
HSRC=$WORK/hsrc
mkdir -p "$HSRC"
mkfile "$HSRC/h.bin" 300000
nginx_start "$HSRC" >/dev/null || { fail "nginx"; finish; }
d=$WORK/c3-listings
mkdir -m 700 "$d"
h=$(python3 -c '
import sys
h = 1469598103934665603
for c in sys.argv[1].encode():
    h = ((h ^ c) * 1099511628211) % 2**64
print("%016x" % h)' "$NGINX_URL")
ln -s "$T/listings" "$d/listings-$h"
pf_mount_ready "$NGINX_URL" "$M" -o "cache_dir=$d,cache_size=16M" || { fail "3c. mount"; finish; }
check "3c. listings a link: byte-exact" cmp -s "$HSRC/h.bin" "$M/h.bin"
pf_umount "$M" || fail "unmount"
check "3c. listings a link: the file is ignored, then replaced" [ -f "$d/listings-$h" ] && [ ! -L "$d/listings-$h" ]
check "3c. the file the link named is intact" targets_intact
nginx_stop

# ---- 4. a poisoned block -------------------------------------------------------

C4=$WORK/c4
mkfile "$SRC/pub.bin" $((1 << 20))
pf_mount_ready "$SRC" "$M" -o "cache_dir=$C4,cache_size=16M" || { fail "mount"; finish; }
check "4. byte-exact" cmp -s "$SRC/pub.bin" "$M/pub.bin"
check "4. cached" wait_cached "$M" $((1 << 20))
pf_umount "$M" || fail "unmount"
slot=$(python3 "$HELPERS/dcpoison.py" "$C4" "$SRC/pub.bin")
check "4. a block poisoned, its record fixed up (slot $slot)" [ -n "$slot" ]
pf_mount_ready "$SRC" "$M" -o "cache_dir=$C4,cache_size=16M" || { fail "mount"; finish; }
check "4. the remount serves the source's bytes" cmp -s "$SRC/pub.bin" "$M/pub.bin"
check "4. never the poison" eval "! grep -a -q POISONED-BY-NOBODY '$M/pub.bin'"
stats_check "4. the block failed its check and was dropped" "$M" "c['dropped'] >= 1"
pf_umount "$M" || fail "unmount"

# ---- 5. a rewrite that restores size and mtime ---------------------------------

C5=$WORK/c5
mkfile "$SRC/v.bin" 200000
pf_mount_ready "$SRC" "$M" -o "cache_dir=$C5,cache_size=16M" || { fail "mount"; finish; }
check "5. byte-exact" cmp -s "$SRC/v.bin" "$M/v.bin"
check "5. cached" wait_cached "$M" 200000
pf_umount "$M" || fail "unmount"
before=$(stat -c '%s %y' "$SRC/v.bin")
mkfile "$WORK/v.new" 200000
cat "$WORK/v.new" >"$SRC/v.bin"	# in place: same inode, new bytes
touch -d "$(echo "$before" | cut -d' ' -f2-)" "$SRC/v.bin"
after=$(stat -c '%s %y' "$SRC/v.bin")
check "5. size and mtime restored to the nanosecond ($after)" [ "$before" = "$after" ]
pf_mount_ready "$SRC" "$M" -o "cache_dir=$C5,cache_size=16M" || { fail "mount"; finish; }
check "5. the remount serves the new bytes" cmp -s "$WORK/v.new" "$M/v.bin"
pf_umount "$M" || fail "unmount"
# the same within one mount: the engine's blocks and the kernel's pages
pf_mount_ready "$SRC" "$M" || { fail "mount"; finish; }
check "5. one mount: byte-exact" cmp -s "$WORK/v.new" "$M/v.bin"
before=$(stat -c '%s %y' "$SRC/v.bin")
mkfile "$WORK/v.new2" 200000
cat "$WORK/v.new2" >"$SRC/v.bin"
touch -d "$(echo "$before" | cut -d' ' -f2-)" "$SRC/v.bin"
check "5. one mount: the next open reads the new bytes" cmp -s "$WORK/v.new2" "$M/v.bin"
pf_umount "$M" || fail "unmount"

# ---- 6. a read-only cache_dir ----------------------------------------------------

C6=$WORK/c6
mkdir -m 700 "$C6"
if mount --bind "$C6" "$C6" && mount -o remount,bind,ro "$C6"; then
	CLEANUP_HOOKS+=("umount '$C6'")
	check "6. a read-only cache_dir: refused, one line" refused "$C6" "$WORK/out6"
	check "6. the line says why" grep -qi "read-only" "$WORK/out6"
	cat "$WORK/out6"
else
	fail "6. cannot make a read-only bind mount"
fi

finish
