#!/bin/bash
# Where the log goes (issue 31): one line at mount says it, and it is
# true.
#   1. in the background where there is no syslog socket (no /dev/log, as
#      in a container): the line says so and names the file the log goes
#      to, /var/log/prefetchfs.log for root; its lines carry a time stamp
#   2. the same for a user, in $XDG_RUNTIME_DIR
#   3. that file cannot be written: the line says so and the log stays on
#      the daemon's stderr
#   4. -o log_file=FILE: the line names FILE, every line of it has a time
#      stamp, and the first is the mount's
# Root runs 1-3 in a private mount namespace, with a tmpfs on /var/log and
# (where there is one) /dev/log hidden, so that nothing of the host's is
# touched.
# tests/run: parallel
if [ "$(id -u)" -eq 0 ] && [ -z "${PF_LOG_NS:-}" ]; then
	PF_LOG_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools

SRC=$WORK/src
MNT=$WORK/mnt
mkdir -p "$SRC" "$MNT"
mkfile "$SRC/a.bin" 300000
STAMP='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{4} prefetchfs\[[0-9]+\]: '

# stamped FILE: every line of FILE starts with a time stamp and the pid
stamped() {
	[ -s "$1" ] && ! grep -qvE "$STAMP" "$1"
}

# mount_bg WHAT OUT ARGS...: prefetchfs ARGS in the background, its
# stderr in OUT; reads a.bin through the mount and unmounts it
mount_bg() {
	local what=$1 out=$2
	shift 2
	track_mount "$MNT"
	if "$@" "$SRC" "$MNT" >/dev/null 2>"$out" && mountpoint -q "$MNT"; then
		ok "$what: mounted"
		check "$what: bytes exact" cmp -s "$SRC/a.bin" "$MNT/a.bin"
		pf_umount "$MNT" || fail "$what: unmount"
	else
		fail "$what: mount: $(cat "$out")"
	fi
}

if [ -n "${PF_LOG_NS:-}" ]; then
	mount -t tmpfs -o size=16m tmpfs /var/log || fail "a tmpfs on /var/log"
	if [ -e /dev/log ]; then
		: >"$WORK/not-a-socket"
		mount --bind "$WORK/not-a-socket" /dev/log || fail "hiding /dev/log"
	fi

	# ---- 1. no syslog socket: root's log file ------------------------------
	mount_bg "1. no /dev/log" "$WORK/1.err" "$PF"
	check "1. one line at mount: no syslog, the log goes to /var/log/prefetchfs.log: $(cat "$WORK/1.err")" \
		bash -c '[ "$(wc -l <"$1")" -eq 1 ] && grep -qF "prefetchfs: mounted on $2; no syslog here (no /dev/log): the log goes to /var/log/prefetchfs.log (-o log_file=FILE to choose)" "$1"' \
		_ "$WORK/1.err" "$MNT"
	check "1. the log file is the user's, mode 0600" \
		test "$(stat -c %a:%u /var/log/prefetchfs.log 2>&1)" = "600:0"
	check "1. it holds the mount and the unmount" \
		bash -c 'grep -q "mounted posix:" "$1" && grep -q "unmounting " "$1"' _ /var/log/prefetchfs.log
	check "1. every line has a time stamp: $(head -1 /var/log/prefetchfs.log)" \
		stamped /var/log/prefetchfs.log

	# ---- 2. a user: $XDG_RUNTIME_DIR ----------------------------------------
	mkdir -p "$WORK/run" "$WORK/umnt"
	chown 65534:65534 "$WORK/run" "$WORK/umnt"
	chmod 755 "$WORK" "$SRC"
	chmod 644 "$SRC/a.bin"
	FUSE_MODE=$(stat -c %a /dev/fuse)
	chmod 666 /dev/fuse	# (a private namespace, not the host's mode)
	track_mount "$WORK/umnt"
	if XDG_RUNTIME_DIR=$WORK/run setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PF" "$SRC" "$WORK/umnt" >/dev/null 2>"$WORK/2.err"; then
		check "2. a user: the log goes to \$XDG_RUNTIME_DIR/prefetchfs.log: $(cat "$WORK/2.err")" \
			grep -qF "the log goes to $WORK/run/prefetchfs.log" "$WORK/2.err"
		setpriv --reuid=65534 --regid=65534 --clear-groups fusermount3 -u "$WORK/umnt"
		sleep 0.3
		check "2. it holds the mount, stamped" stamped "$WORK/run/prefetchfs.log"
	else
		fail "2. mount as nobody: $(cat "$WORK/2.err")"
	fi
	chmod "$FUSE_MODE" /dev/fuse

	# ---- 3. the file cannot be written -------------------------------------
	rm -f /var/log/prefetchfs.log
	mkdir /var/log/prefetchfs.log
	mount_bg "3. an unwritable log file" "$WORK/3.err" "$PF"
	check "3. the line says the log stays on stderr: $(grep "mounted on" "$WORK/3.err")" \
		bash -c 'grep -qF "no syslog here (no /dev/log) and /var/log/prefetchfs.log: Is a directory: the log goes to this stderr" "$1"' _ "$WORK/3.err"
	check "3. and it does: the unmount is there" grep -q "^prefetchfs: unmounting " "$WORK/3.err"
	rmdir /var/log/prefetchfs.log
fi

# ---- 4. -o log_file=FILE ------------------------------------------------------
mount_bg "4. log_file" "$WORK/4.err" "$PF" -o log_file="$WORK/d.log"
check "4. one line at mount names the file: $(cat "$WORK/4.err")" \
	bash -c '[ "$(wc -l <"$1")" -eq 1 ] && grep -qF "; the log goes to $2" "$1"' _ "$WORK/4.err" "$WORK/d.log"
check "4. every line has a time stamp: $(head -1 "$WORK/d.log")" stamped "$WORK/d.log"
check "4. the first line is the mount's" bash -c 'head -1 "$1" | grep -q "mounted posix:"' _ "$WORK/d.log"
finish
