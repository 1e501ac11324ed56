#!/bin/bash
# The Debian package (issue 31): make deb, lintian, then the package's
# life on a Debian system:
#  1. make deb builds prefetchfs_VERSION_ARCH.deb (into this test's temp
#     directory); it holds the daemon, every program the tree builds
#     (prefetchfs-stat, prefetchfs-warm once there is one), the mount
#     helper, each man page, the systemd unit template, the Python
#     module, copyright and changelog; lintian finds no error;
#  2. dpkg -i installs it; the installed daemon, man pages and Python
#     module (for /usr/bin/python3, byte-compiled) are there;
#  3. mount -t fuse.prefetchfs SOURCE MNT -o ... mounts through the
#     installed helper and daemon: byte-exact reads, the installed
#     prefetchfs-stat and Python module read its counters, umount ends
#     the daemon;
#  4. dpkg --purge removes it leaving nothing behind: no file, no
#     directory the package made, nothing of it in dpkg's database, no
#     man page index entry.
#
# The host is not changed: dpkg runs in a private mount namespace where
# /usr, /etc and /var are overlays whose writes go to a tmpfs that ends
# with the test (the real dpkg, its real database, copy-on-write), which
# also lets the test see exactly what the package left.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
need_fuse
for t in dpkg-deb:dpkg-dev lintian:lintian unshare:util-linux; do
	command -v "${t%%:*}" >/dev/null ||
		{ fail "${t%%:*} missing (tests/deps.sh installs ${t#*:})"; finish; }
done

VER=$(sed -n 's/^#define PF_VERSION "\(.*\)"/\1/p' "$TOP/src/front/main.c")
DEB=$WORK/prefetchfs_${VER}_$(dpkg --print-architecture).deb
if make -C "$TOP" --no-print-directory deb DEB_OUT="$WORK" DEB_BUILD="$WORK/debbuild" \
	>"$WORK/make.log" 2>&1 && [ -f "$DEB" ]; then
	ok "make deb: $(basename "$DEB") ($(stat -c %s "$DEB") bytes)"
else
	fail "make deb"
	tail -30 "$WORK/make.log"
	finish
fi

# ---- what the package holds -----------------------------------------------------------
dpkg-deb -c "$DEB" | awk '{ print $6 }' | sed 's|^\./||; s|/$||' | sed '/^$/d' >"$WORK/contents"
want="usr/bin/prefetchfs sbin/mount.fuse.prefetchfs lib/systemd/system/prefetchfs@.service
usr/lib/python3/dist-packages/prefetchfs/__init__.py
usr/lib/python3/dist-packages/prefetchfs/hints.py
usr/lib/python3/dist-packages/prefetchfs-$VER.dist-info/METADATA
usr/share/doc/prefetchfs/copyright usr/share/doc/prefetchfs/changelog.gz"
# every program and man page the tree builds (prefetchfs-warm from the
# moment the Makefile has it)
for p in prefetchfs-stat prefetchfs-warm; do
	if make -C "$TOP" -n "$p" >/dev/null 2>&1; then
		want="$want usr/bin/$p"
	fi
done
for m in "$TOP"/mount/*.[18]; do
	[ -f "$m" ] && want="$want usr/share/man/man${m##*.}/$(basename "$m").gz"
done
missing=
for f in $want; do
	grep -qxF "$f" "$WORK/contents" || missing="$missing $f"
done
check "the package holds the daemon, programs, helper, man pages, unit, module${missing:+ (missing:$missing)}" \
	test -z "$missing"
# (an ELF file without .symtab is stripped; readelf is in binutils)
check "its programs are stripped" bash -c '
	d=$(mktemp -d "$1/x.XXXXXX") && dpkg-deb -x "$2" "$d" &&
	for f in "$d"/usr/bin/*; do readelf -h "$f" >/dev/null 2>&1 || continue
		readelf -S "$f" | grep -q "\.symtab" && exit 1; done; exit 0' \
	_ "$WORK" "$DEB"
dpkg-deb -f "$DEB" Depends >"$WORK/depends"
check "Depends: libfuse3, liburing, libcurl and fuse3 ($(cat "$WORK/depends"))" \
	bash -c 'grep -q "libfuse3-3" "$1" && grep -q liburing "$1" && grep -q libcurl "$1" &&
		grep -qw "fuse3" "$1"' _ "$WORK/depends"

lintian --fail-on error "$DEB" >"$WORK/lintian.out" 2>&1
rc=$?
check "lintian: no error (exit $rc)" test $rc -eq 0
cat "$WORK/lintian.out"

# ---- install, mount, remove in a private namespace ---------------------------------------
SRC=$WORK/src
mkdir -p "$SRC/sub"
mkfile "$SRC/a.bin" $((2 * 1048576 + 123))
mkfile "$SRC/sub/b.bin" 70000
printf 'hello\n' >"$SRC/hello.txt"
M=$WORK/mnt
mkdir -p "$M"
MOUNTS+=("$M")
HOST_BEFORE=$(ls -d /usr/bin/prefetchfs /sbin/mount.fuse.prefetchfs \
	/usr/lib/python3/dist-packages/prefetchfs 2>/dev/null; dpkg-query -W -f='${Status}' prefetchfs 2>/dev/null)
# the package's directories that the system does not have yet: they
# must be gone after --purge
while read -r d; do
	[ -n "$d" ] && [ ! -e "/$d" ] && echo "$d"
done < <(dpkg-deb -c "$DEB" | awk '$1 ~ /^d/ { print $6 }' | sed 's|^\./||; s|/$||') >"$WORK/newdirs"

cat >"$WORK/inner.sh" <<'EOF'
# in a private mount namespace: DEB SRC MNT WORK VER
set -u
DEB=$1 SRC=$2 M=$3 W=$4 VER=$5
ok() { echo "ok $*"; }
fail() { echo "FAIL: $*"; }
chk() { local w=$1; shift; if "$@"; then ok "$w"; else fail "$w"; fi; }
gone() { local i; for ((i = 0; i < 100; i++)); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done; return 1; }
trap 'mountpoint -q "$M" && { umount "$M" || umount -l "$M"; }; pkill -f -x "/usr/bin/prefetchfs .* $M"' EXIT
OV=$W/ov
mkdir -p "$OV"
mount -t tmpfs -o size=1g,mode=0700 tmpfs "$OV" || { fail "tmpfs for the overlays"; exit 1; }
for d in usr etc var; do
	mkdir -p "$OV/$d/up" "$OV/$d/wk"
	mount -t overlay overlay -o "lowerdir=/$d,upperdir=$OV/$d/up,workdir=$OV/$d/wk" "/$d" ||
		{ fail "overlay on /$d"; exit 1; }
done
ok "/usr, /etc, /var are copy-on-write overlays in this namespace"
# a prefetchfs package the host has goes first (in the overlays only)
if dpkg-query -W prefetchfs >/dev/null 2>&1; then
	chk "the host's own prefetchfs package purged first (in the overlays)" \
		bash -c 'dpkg --purge prefetchfs >"$1/dpkg-pre.log" 2>&1' _ "$W"
fi
# what the overlays hold before: after --purge they must hold the same
(cd "$OV" && find usr/up etc/up ! -type d | sort) >"$W/before"

if dpkg -i "$DEB" >"$W/dpkg-i.log" 2>&1; then
	ok "dpkg -i $(basename "$DEB")"
else
	fail "dpkg -i $(basename "$DEB")"
	cat "$W/dpkg-i.log"
	exit 1
fi
chk "dpkg says prefetchfs $VER is installed" \
	test "$(dpkg-query -W -f='${Status} ${Version}' prefetchfs)" = "install ok installed $VER"
chk "/usr/bin/prefetchfs --version: $VER" bash -c '/usr/bin/prefetchfs --version | grep -q "^prefetchfs $1 "' _ "$VER"
chk "man -w prefetchfs, mount.fuse.prefetchfs, prefetchfs-stat find the installed pages" \
	bash -c 'for p in prefetchfs mount.fuse.prefetchfs prefetchfs-stat; do man -w "$p" | grep -q "^/usr/share/man/" || exit 1; done'
chk "/usr/bin/python3 imports the installed prefetchfs $VER, byte-compiled" \
	bash -c 'cd / && /usr/bin/python3 -c "import sys, prefetchfs; sys.exit(not (prefetchfs.__file__ == \"/usr/lib/python3/dist-packages/prefetchfs/__init__.py\" and prefetchfs.__version__ == sys.argv[1]))" "$1" &&
		ls /usr/lib/python3/dist-packages/prefetchfs/__pycache__/*.pyc >/dev/null' _ "$VER"

timeout 30 mount -t fuse.prefetchfs -o max_memory=64M,log_level=warn "$SRC" "$M" 2>"$W/mount.err"
rc=$?
chk "mount -t fuse.prefetchfs SRC MNT -o max_memory=64M: exit 0 (exit $rc)" test $rc -eq 0
cat "$W/mount.err"
if mountpoint -q "$M"; then
	pid=$(pgrep -o -f -x -- "/usr/bin/prefetchfs -o max_memory=64M,log_level=warn $SRC $M")
	chk "the installed daemon serves it (/usr/bin/prefetchfs, pid ${pid:-none})" test -n "$pid"
	chk "mountinfo: fuse.prefetchfs" bash -c 'grep -qE " $1 .* - fuse.prefetchfs " /proc/self/mountinfo' _ "$M"
	bad=
	for f in a.bin sub/b.bin hello.txt; do
		timeout 30 cmp -s "$SRC/$f" "$M/$f" || bad="$bad $f"
	done
	chk "byte-exact reads through the installed package${bad:+ (differ:$bad)}" test -z "$bad"
	chk "the installed prefetchfs-stat --json reads the counters" \
		bash -c 'timeout 10 /usr/bin/prefetchfs-stat --json "$1" | /usr/bin/python3 -c "import json, sys; sys.exit(json.load(sys.stdin)[\"totals\"][\"reads\"] <= 0)"' _ "$M"
	chk "the installed Python module reads them from a subdirectory" \
		bash -c 'cd / && /usr/bin/python3 -c "import sys, prefetchfs; s = prefetchfs.stats(sys.argv[1] + \"/sub\"); sys.exit(not (s.root == sys.argv[1] and s.bytes_served > 2 << 20))" "$1"' _ "$M"
	chk "umount" umount "$M"
	[ -n "$pid" ] && chk "the daemon exits" gone "$pid"
else
	fail "not mounted"
fi

if dpkg --purge prefetchfs >"$W/dpkg-purge.log" 2>&1; then
	ok "dpkg --purge prefetchfs"
else
	fail "dpkg --purge prefetchfs"
	cat "$W/dpkg-purge.log"
fi
chk "dpkg printed no warning (such as a directory not empty)" \
	bash -c '! grep -qi "warning" "$1"' _ "$W/dpkg-purge.log"
cat "$W/dpkg-purge.log" | grep -i warning
chk "dpkg no longer knows prefetchfs" bash -c '! dpkg-query -W prefetchfs >/dev/null 2>&1'
left=$(dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\.||' |
	while read -r f; do [ -e "$f" ] && echo "$f"; done)
chk "every file of the package is gone${left:+ (left: $left)}" test -z "$left"
left=$(while read -r d; do [ -e "/$d" ] && echo "/$d"; done <"$W/newdirs")
chk "every directory the package made is gone${left:+ (left: $left)}" test -z "$left"
# what the overlays gained is what the package's life left on the system:
# nothing in /usr or /etc, in /var only dpkg's own records
left=$(cd "$OV" && find usr/up etc/up ! -type d | sort | comm -13 "$W/before" - | head -5)
chk "nothing left in /usr or /etc${left:+ (left: $left)}" test -z "$left"
# (a whiteout, a character device, is a file of the host's removed: the
# daemon's log there, /var/log/prefetchfs.log, which purge removes)
left=$(cd "$OV" && find var/up -path '*prefetchfs*' ! -type c | head -5)
chk "nothing of prefetchfs left in /var (dpkg's info, man's index, the log)${left:+ (left: $left)}" test -z "$left"
chk "man -w prefetchfs finds nothing" bash -c '! man -w prefetchfs >/dev/null 2>&1'
EOF
unshare -m --propagation private bash "$WORK/inner.sh" "$DEB" "$SRC" "$M" "$WORK" "$VER" \
	>"$WORK/inner.log" 2>&1
rc=$?
cat "$WORK/inner.log"
FAILS=$((FAILS + $(grep -c '^FAIL' "$WORK/inner.log")))
check "the namespace part ran to the end (exit $rc)" test $rc -eq 0
check "no mount of the namespace is seen outside" bash -c '! mountpoint -q "$1"' _ "$M"
HOST_AFTER=$(ls -d /usr/bin/prefetchfs /sbin/mount.fuse.prefetchfs \
	/usr/lib/python3/dist-packages/prefetchfs 2>/dev/null; dpkg-query -W -f='${Status}' prefetchfs 2>/dev/null)
check "the host's files and dpkg database are as before" test "$HOST_BEFORE" = "$HOST_AFTER"

finish
