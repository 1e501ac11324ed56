#!/bin/bash
# The operator's surface: make install / make uninstall (DESTDIR, PREFIX),
# the mount helper (run as mount(8) runs it, then through mount(8) itself
# and an fstab file), prefetchfs-stat on a live mount, the man pages and
# the systemd units.
#
# Nothing is installed outside $WORK: the real installation goes to a
# temporary PREFIX, and mount(8) finds the helper through an overlay on
# /usr/sbin (= /sbin) made in a private mount namespace that ends with the
# test.
# make install and uninstall only copy here: make check built everything
# first.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
need_fuse
STAT=$TOP/prefetchfs-stat
need_tools "$STAT"

SRC=$WORK/src
mkdir -p "$SRC/sub"
mkfile "$SRC/a.bin" $((3 * 1048576 + 17))
mkfile "$SRC/sub/b.bin" 65536
printf 'hello\n' >"$SRC/hello.txt"

# make_q ARGS...: make in the top directory, output to $WORK/make.log
make_q() {
	make -C "$TOP" --no-print-directory "$@" >"$WORK/make.log" 2>&1 ||
		{ cat "$WORK/make.log"; return 1; }
}

# ---- make install DESTDIR=... / make uninstall --------------------------------
DEST=$WORK/dest
FILES="usr/local/bin/prefetchfs usr/local/bin/prefetchfs-stat
usr/local/bin/prefetchfs-warm
sbin/mount.fuse.prefetchfs
usr/local/share/man/man8/prefetchfs.8 usr/local/share/man/man8/mount.fuse.prefetchfs.8
usr/local/share/man/man1/prefetchfs-stat.1
usr/local/share/man/man1/prefetchfs-warm.1
usr/local/lib/systemd/system/prefetchfs@.service
usr/local/share/doc/prefetchfs/examples/fstab.example
usr/local/share/doc/prefetchfs/examples/mnt-imagenet.mount
usr/local/share/doc/prefetchfs/examples/imagenet.conf
usr/local/share/doc/prefetchfs/examples/simple_trainer.py
usr/local/share/doc/prefetchfs/examples/folder_loader.py
usr/local/share/doc/prefetchfs/examples/torch_loader.py
usr/local/share/doc/prefetchfs/examples/folder_loader.py
usr/local/share/doc/prefetchfs/examples/memmap_tokens.py
usr/local/share/doc/prefetchfs/examples/tar_shards.py
usr/local/share/doc/prefetchfs/examples/prefetchfs_hints.py
usr/local/share/doc/prefetchfs/examples/fio/seq-batches.fio
usr/local/share/doc/prefetchfs/examples/fio/seq-batches-mmap.fio
usr/local/share/doc/prefetchfs/examples/fio/strided-ranks.fio
usr/local/share/doc/prefetchfs/examples/fio/per-shard.fio
usr/local/share/doc/prefetchfs/examples/fio/scan.fio
usr/local/share/doc/prefetchfs/examples/fio/random.fio
usr/local/share/doc/prefetchfs/examples/fio/datawait.py"
# the Python package, where /usr/bin/python3 finds it
PYV=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
VER=$(sed -n 's/^#define PF_VERSION "\(.*\)"/\1/p' "$TOP/src/front/main.c")
PYD=usr/local/lib/python$PYV/dist-packages
for f in __init__ hints mount stats warm; do
	FILES="$FILES
$PYD/prefetchfs/$f.py"
done
for f in METADATA WHEEL RECORD INSTALLER top_level.txt; do
	FILES="$FILES
$PYD/prefetchfs-$VER.dist-info/$f"
done
check "/$PYD is on /usr/bin/python3's path" \
	/usr/bin/python3 -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "/$PYD"
if make_q install DESTDIR="$DEST"; then
	ok "make install DESTDIR=$DEST"
else
	fail "make install DESTDIR=$DEST"
fi
missing=
for f in $FILES; do
	[ -f "$DEST/$f" ] || missing="$missing $f"
done
check "every file is installed${missing:+ (missing:$missing)}" test -z "$missing"
check "the daemon, prefetchfs-stat, prefetchfs-warm and the helper are executable" \
	test -x "$DEST/usr/local/bin/prefetchfs" -a -x "$DEST/usr/local/bin/prefetchfs-stat" \
	-a -x "$DEST/usr/local/bin/prefetchfs-warm" -a -x "$DEST/sbin/mount.fuse.prefetchfs"
check "the helper runs /usr/local/bin/prefetchfs" \
	grep -q '^PREFETCHFS=/usr/local/bin/prefetchfs$' "$DEST/sbin/mount.fuse.prefetchfs"
check "the service template runs /usr/local/bin/prefetchfs" \
	grep -q '^ExecStart=/usr/local/bin/prefetchfs ' "$DEST/usr/local/lib/systemd/system/prefetchfs@.service"
check "no @VARIABLE@ is left in installed files" \
	bash -c '! grep -rlI "@[A-Z]*@" "$1"' _ "$DEST"
extra=$(cd "$DEST" && find . -type f | sed 's|^\./||' | sort | comm -23 - <(tr ' ' '\n' <<<"$FILES" | sed '/^$/d' | sort))
check "nothing else is installed${extra:+ (also: $extra)}" test -z "$extra"
if make_q uninstall DESTDIR="$DEST"; then
	ok "make uninstall DESTDIR=$DEST"
else
	fail "make uninstall DESTDIR=$DEST"
fi
left=$(find "$DEST" -type f)
check "make uninstall removes every file${left:+ (left: $left)}" test -z "$left"
check "make uninstall removes the doc directory" test ! -e "$DEST/usr/local/share/doc/prefetchfs"

# ---- man pages ----------------------------------------------------------------
for p in mount/prefetchfs.8 mount/mount.fuse.prefetchfs.8 mount/prefetchfs-stat.1 \
	mount/prefetchfs-warm.1; do
	MANWIDTH=100 man --warnings=all -l "$TOP/$p" >"$WORK/man.txt" 2>"$WORK/man.err"
	check "man -l $p renders ($(wc -l <"$WORK/man.txt") lines)" test -s "$WORK/man.txt"
	check "man -l $p: no troff warnings" test ! -s "$WORK/man.err"
	cat "$WORK/man.err"
done
MANWIDTH=200 man -l "$TOP/mount/prefetchfs.8" 2>/dev/null >"$WORK/man8.txt"
"$TOP/prefetchfs" --help >"$WORK/help.txt"
undoc=
for o in $(grep -oE -- '-o [a-z_]+' "$WORK/help.txt" | awk '{ print $2 }' | sort -u); do
	grep -q -- "$o" "$WORK/man8.txt" || undoc="$undoc $o"
done
check "prefetchfs(8) describes every option of --help${undoc:+ (not:$undoc)}" test -z "$undoc"
# an option's entry is its line and the indented lines after it
nodefault=$(awk '/^    -o [a-z_]+=/ { if (e != "" && e !~ /default/) print n; n = $2; e = $0; next }
	/^                    / { if (e != "") e = e $0; next }
	{ if (e != "" && e !~ /default/) print n; e = "" }' "$WORK/help.txt")
check "--help gives every option with a value its default${nodefault:+ (not: $nodefault)}" test -z "$nodefault"
# One table of options feeds the parser, --help and --help-table; the man
# page's entries and docs/options.md's table are checked against it, in the
# same words, so that none of them can drift (fetch_size was 1024K in
# --help, 1M in the man page).
"$TOP/prefetchfs" --help-table >"$WORK/table.md"
if python3 - "$WORK/table.md" "$TOP/mount/prefetchfs.man" "$TOP/docs/options.md" >"$WORK/doc.out" 2>&1 <<'PY'
import re, sys
table, man, options = sys.argv[1:4]
rows = []
for line in open(table):
    m = re.match(r'^\| `-o ([a-z_]+)[^`]*` \| (.*?) \| (.*?) \| (.*) \|$', line.rstrip("\n"))
    if m:
        rows.append((m.group(1), m.group(2).replace("\\|", "|"), m.group(3)))
if len(rows) < 30:
    sys.exit("only %d rows in --help-table" % len(rows))
entries = {}
cur = None
for line in open(man):
    line = line.rstrip("\n")
    if line.startswith("%page "):
        if cur: entries.setdefault(cur[0], []).append(cur[1])
        cur = None
        if line.split()[1] != "prefetchfs":
            break
        continue
    if line.startswith("@ "):
        if cur: entries.setdefault(cur[0], []).append(cur[1])
        tag = line[2:]
        cur = [tag, ""]
        continue
    if cur is not None:
        if not line.strip() or line.startswith("#"):
            entries.setdefault(cur[0], []).append(cur[1])
            cur = None
        else:
            cur[1] += " " + line
bad = []
for name, dflt, rng in rows:
    texts = [re.sub(r"\*\*|__", "", t) for tag, ts in entries.items()
             if re.search(r"\*\*%s(\*\*|=)" % re.escape(name), tag) for t in ts]
    if not texts:
        bad.append("%s: no entry in the man page" % name)
        continue
    t = re.sub(r"\s+", " ", " ".join(texts))
    if dflt and "default %s" % dflt not in t:
        bad.append("%s: the man page does not say 'default %s'" % (name, dflt))
    if rng and rng not in t:
        bad.append("%s: the man page does not give the range '%s'" % (name, rng))
tab = open(table).read()
rd = open(options).read()
if tab not in rd:
    bad.append("docs/options.md's table is not `prefetchfs --help-table`")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
then
	ok "the man page gives every option of --help-table its default and range, docs/options.md has the table"
else
	fail "the documentation disagrees with the options table:"
	cat "$WORK/doc.out"
fi
for o in $(awk -F'`' '/^\| `-o / { print $2 }' "$WORK/table.md" | sed 's/^-o \([a-z_]*\).*/\1/'); do
	grep -qE -- "-o $o(=|[ ,]|$)" "$WORK/help.txt" || nohelp="${nohelp:-} $o"
done
check "--help lists every option of the table${nohelp:+ (not:$nohelp)}" test -z "${nohelp:-}"
# the front end's static functions are lo_* (libfuse's passthrough_ll.c):
# pf_* names are shared ones (front_int.h) or public (pf_fuse.h)
FUSE_OBJS="fuse_ll.o meta.o fuse_push.o fuse_signals.o"
statics=$(cd "$TOP/src/front" && nm $FUSE_OBJS 2>/dev/null | awk '$2 == "t" && $3 ~ /^pf_/ && $3 !~ /\./ { print $3 }' | tr '\n' ' ')
check "the FUSE files ($FUSE_OBJS) have no static pf_* function${statics:+ (has: $statics)}" \
	bash -c 'nm "$1" | grep -q " T pf_fuse_push$" && [ -z "$2" ]' _ "$TOP/src/front/fuse_push.o" "$statics"
# the engine core calls its features across files (engine/ahead/) only
# through its hooks table (src/engine/hooks.h): none of its objects names
# a symbol one of theirs defines
ahead_defs=$(nm --defined-only "$TOP"/src/engine/ahead/*.o 2>/dev/null | awk '$2 ~ /^[A-Z]$/ { print $3 }' | sort -u)
core_refs=$(nm -u "$TOP"/src/engine/*.o 2>/dev/null | awk 'NF == 2 { print $2 }' | sort -u)
loops=$(comm -12 <(echo "$ahead_defs") <(echo "$core_refs") | tr '\n' ' ')
check "no object of src/engine/ names a symbol of src/engine/ahead/${loops:+ (names: $loops)}" \
	test -n "$ahead_defs" -a -n "$core_refs" -a -z "${loops// /}"

# ---- systemd units --------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
	U=$WORK/units
	mkdir -p "$U"
	sed "s|@BINDIR@|$TOP|" "$TOP/mount/prefetchfs@.service.in" >"$U/prefetchfs@.service"
	cp "$TOP/mount/mnt-imagenet.mount" "$U/"
	(cd "$U" && systemd-analyze verify --man=no "$U/prefetchfs@imagenet.service" \
		"$U/mnt-imagenet.mount") >"$WORK/verify.log" 2>&1
	check "systemd-analyze verify: the service template and the mount unit are clean" \
		test ! -s "$WORK/verify.log"
	cat "$WORK/verify.log"
else
	ok "(systemd-analyze is not installed: units not verified)"
fi

# ---- a real installation in a temporary PREFIX ----------------------------------
P=$WORK/prefix
if make_q install PREFIX="$P" MOUNTHELPERDIR="$P/sbin"; then
	ok "make install PREFIX=$P"
else
	fail "make install PREFIX=$P"
	finish
fi
HELPER=$P/sbin/mount.fuse.prefetchfs
IPF=$P/bin/prefetchfs

# helper_pid MNT: the installed daemon serving MNT
helper_pid() { daemon_pid "$IPF" "$1"; }

# byte_exact MNT WHAT: every file of the tree reads back exactly
byte_exact() {
	local f bad=
	for f in a.bin sub/b.bin hello.txt; do
		guard "$1" 30 cmp -s "$SRC/$f" "$1/$f" || bad="$bad $f"
	done
	check "$2: byte-exact reads${bad:+ (differ:$bad)}" test -z "$bad"
}

# term_wait MNT WHAT: SIGTERM to the daemon of MNT, which unmounts and
# exits within 5 s (umount(8) could fail with EBUSY while prefetchfs-stat
# has the stats file open)
term_wait() {
	local pid
	pid=$(helper_pid "$1")
	if [ -z "$pid" ]; then
		fail "$2: no daemon found"
		return
	fi
	kill -TERM "$pid"
	check "$2: the daemon exits on SIGTERM" wait_gone "$pid" 50
	check "$2: no mount left" bash -c '! mountpoint -q "$1"' _ "$1"
}

# As mount(8) runs it: SOURCE MOUNTPOINT -o OPTIONS -n, with the rw that
# mount adds and fstab options the daemon must ignore
M1=$WORK/mnt-helper
mkdir -p "$M1"
MOUNTS+=("$M1")
if "$HELPER" "$SRC" "$M1" -o rw,max_memory=64M,log_level=warn,_netdev,nofail,noauto,x-systemd.automount,dev,suid -n \
	>"$WORK/helper.out" 2>"$WORK/helper.err" && mountpoint -q "$M1"; then
	ok "mount.fuse.prefetchfs SRC MNT -o rw,...,_netdev,nofail,x-systemd.automount -n mounts"
	pid=$(helper_pid "$M1")
	[ -n "$pid" ] && DAEMON_PIDS+=("$pid")
	check "the daemon runs in the background, the options passed through but rw" \
		bash -c 'tr "\0" " " <"/proc/$1/cmdline" | grep -qF -- "-o max_memory=64M,log_level=warn,_netdev,nofail,noauto,x-systemd.automount,dev,suid "' _ "$pid"
	# not "ro" at the VFS (the hint control file is written); the tree
	# refuses every change with EROFS (mount_tree.sh, mount_http.sh)
	check "the mount is fuse.prefetchfs" \
		bash -c 'grep -qE " $1 .* - fuse.prefetchfs " /proc/self/mountinfo' _ "$M1"
	byte_exact "$M1" "helper mount"
	check "the installed Python package reads the stats from a subdirectory" \
		env PYTHONPATH="$P/lib/python$PYV/dist-packages" /usr/bin/python3 -c '
import sys, prefetchfs
s = prefetchfs.stats(sys.argv[1] + "/sub")
sys.exit(not (prefetchfs.__file__.startswith(sys.argv[2]) and s.root == sys.argv[1] and s.reads > 0))' "$M1" "$P/"
	# (syslog where there is a socket for it, else a file: mount_log.sh)
	check "the helper printed one line, where the log goes: $(cat "$WORK/helper.err")" \
		bash -c '[ ! -s "$1" ] && one_line() { [ "$(wc -l <"$2")" -eq 1 ]; } && one_line x "$2" &&
			if [ -S /dev/log ]; then
				grep -q "^prefetchfs: mounted on .*; the log goes to syslog (journalctl -t prefetchfs)$" "$2"
			else
				grep -q "^prefetchfs: mounted on .*; no syslog here (no /dev/log): the log goes to " "$2"
			fi' \
		_ "$WORK/helper.out" "$WORK/helper.err"

	# prefetchfs-stat on the live mount
	timeout 10 "$STAT" --json "$M1" >"$WORK/stat.json"
	check "prefetchfs-stat --json exits 0" test $? -eq 0
	stats_check "prefetchfs-stat --json prints the stats, valid JSON" \
		"$WORK/stat.json" '"totals" in s and "streams" in s'
	timeout 10 "$STAT" -n 3 -i 0.2 "$M1" >"$WORK/stat.txt" 2>&1
	check "prefetchfs-stat -n 3 -i 0.2 exits 0" test $? -eq 0
	check "prefetchfs-stat -n 3: three screens" test "$(grep -c '^prefetchfs-stat ' "$WORK/stat.txt")" -eq 3
	check "prefetchfs-stat: hit rate, waits, throughput, memory, streams" \
		bash -c 'grep -q "hit%" "$1" && grep -q "wait ms" "$1" && grep -q "served .*fetched .*pushed" "$1" && grep -q "^memory " "$1" && grep -q "^FILE .*PATTERN .*BATCH" "$1" && grep -q "^MB/s 0\.[0-9]s " "$1"' _ "$WORK/stat.txt"
	check "prefetchfs-stat: a stream of a.bin" grep -qE '^a\.bin +[0-9]+ +[a-z]+ ' "$WORK/stat.txt"
	# the mount goes away under a running prefetchfs-stat
	"$STAT" -i 0.1 "$M1" >/dev/null 2>"$WORK/stat.err" &
	statpid=$!
	sleep 0.5
	term_wait "$M1" "helper mount"
	if wait_gone "$statpid" 30; then
		wait "$statpid"
		rc=$?
		check "prefetchfs-stat exits 1 when the mount goes away (exit $rc)" test $rc -eq 1
		check "prefetchfs-stat says the mount went away: $(cat "$WORK/stat.err")" \
			grep -qE "went away|not a prefetchfs mount" "$WORK/stat.err"
	else
		fail "prefetchfs-stat still runs 3 s after the mount went away"
		kill "$statpid"
	fi
else
	fail "mount.fuse.prefetchfs SRC MNT -o ... (exit $?):"
	cat "$WORK/helper.out" "$WORK/helper.err"
fi
timeout 10 "$STAT" "$M1" >/dev/null 2>"$WORK/stat.err"
check "prefetchfs-stat on a directory that is not a mount: exit 1" test $? -eq 1
check "prefetchfs-stat: one line naming the problem" \
	bash -c '[ "$(wc -l <"$1")" -eq 1 ] && grep -q "not a prefetchfs mount" "$1"' _ "$WORK/stat.err"
quiet "$STAT" --frobnicate "$M1"
check "prefetchfs-stat --frobnicate: exit 2" test $? -eq 2
check "prefetchfs-stat --help" quiet "$STAT" --help

# -f (fake) and -v print the command, a bad option fails with one line
"$HELPER" "$SRC" "$M1" -fv -o max_memory=64M >"$WORK/fake.out" 2>&1
check "helper -f: exit 0" test $? -eq 0
check "helper -f: prints the command" grep -qF "$IPF -o max_memory=64M $SRC $M1" "$WORK/fake.out"
check "helper -f: mounts nothing" bash -c '! mountpoint -q "$1"' _ "$M1"
"$HELPER" "$SRC" "$M1" -o max_memory=lots >"$WORK/bad.out" 2>"$WORK/bad.err"
rc=$?
check "helper -o max_memory=lots: fails (exit $rc)" test $rc -ne 0
check "helper -o max_memory=lots: one line naming it: $(cat "$WORK/bad.err")" \
	bash -c 'one_line() { [ "$(wc -l <"$1")" -eq 1 ]; }; one_line "$1" && grep -q max_memory "$1"' _ "$WORK/bad.err"
check "helper -o max_memory=lots: no mount" bash -c '! mountpoint -q "$1"' _ "$M1"

# ---- mount(8) and an fstab file, with the helper in /sbin -----------------------
# In a private mount namespace /usr/sbin (which /sbin links to) gets an
# overlay adding $P/sbin, so mount(8) finds the helper there; the mounts
# made in the namespace are seen, used and unmounted in it.
M2=$WORK/mnt-mount
M3=$WORK/mnt-fstab
mkdir -p "$M2" "$M3"
printf '%s %s fuse.prefetchfs max_memory=64M,allow_other,_netdev,nofail,x-systemd.requires-mounts-for=/,comment=test 0 0\n' \
	"$SRC" "$M3" >"$WORK/fstab"
SBIN_BEFORE=$(ls /sbin/mount.fuse.prefetchfs 2>/dev/null)
cat >"$WORK/inner.sh" <<'EOF'
# runs in the private namespace: $1 = sbin to add, then lib.sh-like lines
set -u
SBIN=$1 IPF=$2 SRC=$3 M2=$4 M3=$5 FSTAB=$6 STAT=$7 PIDS=$8
ok() { echo "ok $*"; }
fail() { echo "FAIL: $*"; }
chk() { local w=$1; shift; if "$@"; then ok "$w"; else fail "$w"; fi; }
gone() { local i; for ((i = 0; i < 50; i++)); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done; return 1; }
trap 'for m in "$M2" "$M3"; do mountpoint -q "$m" && umount -l "$m"; done' EXIT
mount -t overlay overlay -o "lowerdir=$SBIN:/usr/sbin" /usr/sbin || { fail "overlay on /usr/sbin"; exit 1; }
chk "mount(8) sees the helper in /sbin" test -x /sbin/mount.fuse.prefetchfs
for how in "mount -t fuse.prefetchfs" "mount --fstab (fstab line)"; do
	if [ "$how" = "mount -t fuse.prefetchfs" ]; then
		m=$M2
		timeout 30 mount -t fuse.prefetchfs -o max_memory=64M "$SRC" "$m"
	else
		m=$M3
		timeout 30 mount --fstab "$FSTAB" "$m"
	fi
	rc=$?
	chk "$how: exit 0 (exit $rc)" test $rc -eq 0
	chk "$how: mounted" mountpoint -q "$m" || continue
	pid=$(pgrep -o -f -x -- "$IPF .* $m")
	echo "$pid" >>"$PIDS"
	bad=
	for f in a.bin sub/b.bin hello.txt; do
		timeout 30 cmp -s "$SRC/$f" "$m/$f" || bad="$bad $f"
	done
	chk "$how: byte-exact reads${bad:+ (differ:$bad)}" test -z "$bad"
	chk "$how: prefetchfs-stat --json parses" \
		bash -c 'timeout 10 "$1" --json "$2" | python3 -c "import json,sys; json.load(sys.stdin)"' _ "$STAT" "$m"
	chk "$how: umount" umount "$m"
	[ -n "$pid" ] && chk "$how: the daemon exits" gone "$pid"
	chk "$how: unmounted" bash -c '! mountpoint -q "$1"' _ "$m"
done
EOF
unshare -m --propagation private bash "$WORK/inner.sh" "$P/sbin" "$IPF" "$SRC" "$M2" "$M3" \
	"$WORK/fstab" "$P/bin/prefetchfs-stat" "$WORK/ns.pids" >"$WORK/inner.log" 2>&1
rc=$?
cat "$WORK/inner.log"
for p in $(cat "$WORK/ns.pids" 2>/dev/null); do DAEMON_PIDS+=("$p"); done
FAILS=$((FAILS + $(grep -c '^FAIL' "$WORK/inner.log")))
check "the namespace part ran to the end (exit $rc)" test $rc -eq 0
check "no mount of the namespace is seen outside" \
	bash -c '! mountpoint -q "$1" && ! mountpoint -q "$2"' _ "$M2" "$M3"
check "the host's /sbin is as before" test "$SBIN_BEFORE" = "$(ls /sbin/mount.fuse.prefetchfs 2>/dev/null)"

# ---- make uninstall of the real installation ---------------------------------------
if make_q uninstall PREFIX="$P" MOUNTHELPERDIR="$P/sbin"; then
	ok "make uninstall PREFIX=$P"
else
	fail "make uninstall PREFIX=$P"
fi
left=$(find "$P" -type f)
check "make uninstall PREFIX=$P removes every file${left:+ (left: $left)}" test -z "$left"

finish
