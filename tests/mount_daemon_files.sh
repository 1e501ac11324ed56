#!/bin/bash
# tests/run: parallel
# The files the daemon writes, -o trace=FILE and -o log_file=FILE, in a
# directory another user can write (issue 28).  Run as root, the other
# user is nobody, the directory nobody's own:
#   1. a symlink nobody planted for the trace, for the log: the mount is
#      refused with one line; the root file it names keeps bytes and size
#   2. a file nobody made for the trace: refused (nobody would read what
#      root's mount reads); its bytes kept
#   3. new trace and log files are 0600, whatever the umask
# With PF_BIN=<a build before issue 28> sections 1 and 2 fail.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools
if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
	echo "needs root and the user nobody"
	exit 77
fi
chmod 711 "$WORK"
NOB=$WORK/nobodys
mkdir -m 755 "$NOB"
chown nobody "$NOB"
as_nobody() { runuser -u nobody -- "$@"; }
SRC=$WORK/src
M=$WORK/mnt
mkdir -p "$SRC" "$M"
mkfile "$SRC/a.bin" 100000
ROOTF=$WORK/root.conf
head -c 1000 /dev/urandom >"$ROOTF"
chmod 600 "$ROOTF"
SUM=$(sha256sum <"$ROOTF")
root_intact() {
	[ "$(sha256sum <"$ROOTF")" = "$SUM" ] && [ "$(stat -c %s "$ROOTF")" = 1000 ]
}

# refused OPTS OUT: a mount with OPTS fails with one line in OUT
refused() {
	"$PF" -o "$1" "$SRC" "$M" >"$2" 2>&1 && { fusermount3 -u "$M"; return 1; }
	! mountpoint -q "$M" && one_line_err "$2"
}

# ---- 1. symlinks ------------------------------------------------------------

as_nobody ln -s "$ROOTF" "$NOB/trace.json"
check "1. trace=, a symlink of nobody's: refused, one line" refused "trace=$NOB/trace.json" "$WORK/out1"
check "1. the line says why" grep -q "trace '$NOB/trace.json': a symlink: refused" "$WORK/out1"
check "1. the file the link names is intact" root_intact
cat "$WORK/out1"
as_nobody ln -s "$ROOTF" "$NOB/pf.log"
check "1. log_file=, a symlink of nobody's: refused, one line" refused "log_file=$NOB/pf.log" "$WORK/out1l"
check "1. the line says why" grep -q "log_file '$NOB/pf.log': a symlink: refused" "$WORK/out1l"
check "1. the file the link names is intact" root_intact
cat "$WORK/out1l"

# ---- 2. a file of nobody's ---------------------------------------------------

as_nobody sh -c "echo nobody\\'s >'$NOB/own.json'"
check "2. trace=, a file of nobody's: refused, one line" refused "trace=$NOB/own.json" "$WORK/out2"
check "2. the line says why" grep -q "a file of another user: refused" "$WORK/out2"
check "2. its bytes are kept" [ "$(cat "$NOB/own.json")" = "nobody's" ]

# ---- 3. new files --------------------------------------------------------------

(umask 0 && pf_mount "$SRC" "$M" -o "trace=$WORK/t.json,log_file=$WORK/pf.log") || fail "mount"
check "3. byte-exact" cmp -s "$SRC/a.bin" "$M/a.bin"
pf_umount "$M" || fail "unmount"
check "3. a new trace is 0600 ($(stat -c %a "$WORK/t.json"))" [ "$(stat -c %a "$WORK/t.json")" = 600 ]
check "3. a new log is 0600 ($(stat -c %a "$WORK/pf.log"))" [ "$(stat -c %a "$WORK/pf.log")" = 600 ]
check "3. the trace is written" grep -q traceEvents "$WORK/t.json"

finish
