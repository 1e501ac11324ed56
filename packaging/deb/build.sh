#!/bin/bash
# packaging/deb/build.sh VERSION OUTDIR BUILDDIR - make deb: builds
# OUTDIR/prefetchfs_VERSION_ARCH.deb with Debian's tools.
#
#   1. copies the sources (Makefile, src, include, mount, python, examples)
#      to BUILDDIR/tree and builds them there with Debian's build flags
#      (dpkg-buildflags, hardening=+all), whatever the working tree was
#      built with (SANITIZE=, DEVELOPER=): the tree's own build is left
#      alone;
#   2. installs them with make install DESTDIR=BUILDDIR/root PREFIX=/usr
#      (the daemon; its programs: prefetchfs-stat, and prefetchfs-warm
#      from the moment the Makefile has a target for it; the mount helper
#      in /sbin, the man pages, the systemd unit template in
#      /lib/systemd/system, the Python package in
#      /usr/lib/python3/dist-packages);
#   3. does what debhelper would: strips the programs, compresses the man
#      pages, adds copyright and changelog, computes Depends with
#      dpkg-shlibdeps, writes md5sums and the maintainer scripts (the
#      Python byte code: py3compile, py3clean);
#   4. dpkg-deb --build, files owned by root.
# Maintainer: $DEBFULLNAME <$DEBEMAIL> (Debian's convention), else git's
# user.name and user.email, else a placeholder.  DEB_JOBS: make -j
# (default 2).  lintian checks the result (tests/mount_deb.sh).
set -euo pipefail
if [ $# -ne 3 ]; then
	echo "usage: $0 VERSION OUTDIR BUILDDIR" >&2
	exit 2
fi
VERSION=$1
OUT=$2
B=$3
TOP=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$TOP/packaging/deb
PROG="make deb"

die() {
	echo "$PROG: $*" >&2
	exit 1
}
for t in dpkg-deb:dpkg dpkg-shlibdeps:dpkg-dev dpkg-buildflags:dpkg-dev \
	/usr/bin/python3:python3 strip:binutils; do
	command -v "${t%%:*}" >/dev/null 2>&1 ||
		die "${t%%:*} not found: apt-get install ${t#*:}"
done
ARCH=$(dpkg --print-architecture)
DEB=prefetchfs_${VERSION}_${ARCH}.deb
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$B"
mkdir -p "$B/tree" "$B/root/DEBIAN" "$B/shlibs/debian"
B=$(cd "$B" && pwd)
T=$B/tree
R=$B/root

# ---- 1. a fresh build with Debian's flags ------------------------------------------
tar -C "$TOP" --exclude='*.[oad]' --exclude=__pycache__ \
	--exclude='mount/*.[18]' -cf - Makefile src include mount python examples |
	tar -C "$T" -xf -
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS="$(cd "$T" && dpkg-buildflags --get CFLAGS) $(cd "$T" && dpkg-buildflags --get CPPFLAGS)"
LDFLAGS=$(cd "$T" && dpkg-buildflags --get LDFLAGS)
# the make that called this one passes its command line (SANITIZE=...) in
# MAKEFLAGS: not to this build
unset MAKEFLAGS MFLAGS MAKELEVEL
MK=(make -C "$T" --no-print-directory SANITIZE= DEVELOPER= V=)
echo "  BUILD   $T (dpkg-buildflags)"
"${MK[@]}" -j"${DEB_JOBS:-2}" all CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS" \
	>"$B/build.log" 2>&1 || { cat "$B/build.log" >&2; die "the build failed"; }

# the daemon's programs: each one the Makefile has a target for goes in,
# built if "all" did not build it
TOOLS="prefetchfs-stat prefetchfs-warm"
for t in $TOOLS; do
	if "${MK[@]}" -n "$t" >/dev/null 2>&1 && [ ! -x "$T/$t" ]; then
		"${MK[@]}" -j"${DEB_JOBS:-2}" "$t" CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS" \
			>>"$B/build.log" 2>&1 || { cat "$B/build.log" >&2; die "building $t failed"; }
	fi
done

# ---- 2. make install into the package's root ----------------------------------------
"${MK[@]}" install DESTDIR="$R" PREFIX=/usr SYSTEMDUNITDIR=/lib/systemd/system \
	MOUNTHELPERDIR=/sbin PYTHONDIR=/usr/lib/python3/dist-packages \
	PYTHON_INSTALLER=dpkg >"$B/install.log" 2>&1 ||
	{ cat "$B/install.log" >&2; die "make install failed"; }
for t in $TOOLS; do
	if [ -x "$T/$t" ] && [ ! -e "$R/usr/bin/$t" ]; then
		install -m 755 "$T/$t" "$R/usr/bin/$t"
	fi
done

# ---- 3. what debhelper would do ------------------------------------------------------
ELF=()
while IFS= read -r -d '' f; do
	if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
		ELF+=("$f")
		strip --remove-section=.comment --remove-section=.note \
			--strip-unneeded "$f"
	fi
done < <(find "$R" -type f -perm -u+x -print0)
[ ${#ELF[@]} -gt 0 ] || die "no program installed in $R"
find "$R/usr/share/man" -type f ! -name '*.gz' -exec gzip -9n {} +

if [ -n "${DEBFULLNAME:-}" ] && [ -n "${DEBEMAIL:-}" ]; then
	MAINT="$DEBFULLNAME <$DEBEMAIL>"
elif name=$(git -C "$TOP" config user.name 2>/dev/null) &&
	mail=$(git -C "$TOP" config user.email 2>/dev/null); then
	MAINT="$name <$mail>"
else
	MAINT="prefetchfs maintainers <maintainers@prefetchfs.invalid>"
fi
# the changelog's date and every file's time: SOURCE_DATE_EPOCH, else the
# last commit's (the same tree, the same package), else now
WHEN=${SOURCE_DATE_EPOCH:-$(git -C "$TOP" log -1 --format=%ct 2>/dev/null || date +%s)}
FIRST=$(git -C "$TOP" log --reverse --format=%ad --date=format:%Y 2>/dev/null | awk "NR == 1")
LAST=$(date -u -d "@$WHEN" +%Y)
YEARS=${FIRST:-$LAST}
[ "$YEARS" = "$LAST" ] || YEARS=$YEARS-$LAST
DOC=$R/usr/share/doc/prefetchfs
mkdir -p "$DOC"
sed "s|@YEARS@|$YEARS|" "$HERE/copyright" >"$DOC/copyright"
chmod 644 "$DOC/copyright"
{
	printf 'prefetchfs (%s) unstable; urgency=medium\n\n' "$VERSION"
	printf '  * Built from the prefetchfs source tree (make deb).\n\n'
	printf ' -- %s  %s\n' "$MAINT" "$(LC_ALL=C date -R -u -d "@$WHEN")"
} | gzip -9n >"$DOC/changelog.gz"
chmod 644 "$DOC/changelog.gz"
# the debian/changelog dpkg-shlibdeps wants beside its debian/control
zcat "$DOC/changelog.gz" >"$B/shlibs/debian/changelog"

printf 'Source: prefetchfs\n\nPackage: prefetchfs\nArchitecture: any\n' \
	>"$B/shlibs/debian/control"
SHLIBS=$(cd "$B/shlibs" && dpkg-shlibdeps -O "${ELF[@]}" 2>"$B/shlibs.log" |
	sed -n 's/^shlibs:Depends=//p') ||
	{ cat "$B/shlibs.log" >&2; die "dpkg-shlibdeps failed"; }
[ -n "$SHLIBS" ] || { cat "$B/shlibs.log" >&2; die "dpkg-shlibdeps found no library"; }

# the programs beside the daemon, for the description
TOOLS=
for t in "$R"/usr/bin/prefetchfs-*; do
	[ -e "$t" ] && TOOLS="$TOOLS${TOOLS:+, }$(basename "$t")"
done
SIZE=$(du -sk --apparent-size --exclude=DEBIAN "$R" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$ARCH|" -e "s|@MAINTAINER@|$MAINT|" \
	-e "s|@SIZE@|$SIZE|" -e "s|@SHLIBS@|$SHLIBS|" -e "s|@TOOLS@|$TOOLS|" \
	"$HERE/control.in" \
	>"$R/DEBIAN/control"
install -m 755 "$HERE/postinst" "$HERE/prerm" "$HERE/postrm" "$R/DEBIAN/"
(cd "$R" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
	xargs -0 md5sum) >"$R/DEBIAN/md5sums"
chmod 644 "$R/DEBIAN/control" "$R/DEBIAN/md5sums"
# dpkg-deb and lintian want 0755 directories, whatever the umask made
find "$R" -type d -exec chmod 755 {} +
find "$R" -exec touch -h -d "@$WHEN" {} +

# ---- 4. the package --------------------------------------------------------------------
dpkg-deb --root-owner-group -Zxz --build "$R" "$OUT/$DEB" >/dev/null
echo "  DEB     $OUT/$DEB"
