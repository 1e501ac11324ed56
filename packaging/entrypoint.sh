#!/bin/sh
# prefetchfs-entrypoint - the container image's entrypoint: mounts
# $PREFETCHFS_SOURCE on $PREFETCHFS_MOUNTPOINT and serves it until told to
# stop, then unmounts.
#
#   PREFETCHFS_SOURCE       a directory, http(s):// or s3:// URL (required)
#   PREFETCHFS_MOUNTPOINT   where to mount it (required; made if missing)
#   PREFETCHFS_OPTIONS      prefetchfs -o options, comma-separated
#                           (max_memory=8G,cache_dir=/cache,allow_other...)
#   PREFETCHFS_BIN          the daemon (default: prefetchfs from PATH)
#
#   entrypoint.sh                  serve the mount (a DaemonSet, a sidecar)
#   entrypoint.sh COMMAND [ARG...] mount, run COMMAND, unmount when it
#                                  ends; its exit status is the script's
#
# The daemon runs in the foreground (-f) as this script's child, its log
# on stderr (the container's log).  SIGTERM, SIGINT or SIGHUP go to
# COMMAND if there is one, else to the daemon, which unmounts and exits;
# whatever way the daemon ends, a mount it left is removed before the
# script exits.  A dead mount left on MOUNTPOINT by an earlier container
# (a hostPath with Bidirectional propagation outlives it) is removed
# first.  Exit status: the daemon's (0 after SIGTERM) or COMMAND's; 2 for
# a missing variable, 1 when the container lacks what a FUSE mount needs
# (/dev/fuse, CAP_SYS_ADMIN: one line says which and how to give it).
# See docs/packaging.md.
set -u
PROG=prefetchfs-entrypoint

say() { echo "$PROG: $*" >&2; }
die() {
	say "$*"
	exit 1
}

SOURCE=${PREFETCHFS_SOURCE:-}
MP=${PREFETCHFS_MOUNTPOINT:-}
OPTIONS=${PREFETCHFS_OPTIONS:-}
PF=${PREFETCHFS_BIN:-prefetchfs}
[ -n "$SOURCE" ] || { say "PREFETCHFS_SOURCE is not set (the directory or URL to mount)"; exit 2; }
[ -n "$MP" ] || { say "PREFETCHFS_MOUNTPOINT is not set (where to mount $SOURCE)"; exit 2; }
command -v "$PF" >/dev/null 2>&1 || die "$PF not found (install the prefetchfs package, or set PREFETCHFS_BIN)"

# ---- what a FUSE mount needs from the container ------------------------------
[ -c /dev/fuse ] ||
	die "no /dev/fuse in this container: docker run --device /dev/fuse; Kubernetes: privileged, or a device plugin giving /dev/fuse (docs/packaging.md)"
# (the device cgroup can refuse a node that is there)
(: <>/dev/fuse) 2>/dev/null ||
	die "/dev/fuse cannot be opened (the container's device rules refuse it): docker run --device /dev/fuse, not a bind mount of it"
# CAP_SYS_ADMIN (bit 21) mounts; root needs it in its effective set, another
# user in the bounding set (fusermount3, set-uid, gains it from there)
if [ "$(id -u)" -eq 0 ]; then
	caps=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
else
	caps=$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)
fi
if [ -z "$caps" ] || [ $(((0x$caps >> 21) & 1)) -ne 1 ]; then
	die "no CAP_SYS_ADMIN, which mounting needs: docker run --cap-add SYS_ADMIN; Kubernetes: securityContext.capabilities.add: [SYS_ADMIN] (docs/packaging.md)"
fi

# ---- the mount point ----------------------------------------------------------
mkdir -p "$MP" 2>/dev/null || [ -d "$MP" ] || die "cannot make the mount point $MP"
MP=$(cd "$MP" 2>/dev/null && pwd -P) || {
	# a dead FUSE mount cannot even be entered: its parent's path will do
	MP=$(cd "$(dirname "$PREFETCHFS_MOUNTPOINT")" && pwd -P)/$(basename "$PREFETCHFS_MOUNTPOINT")
}

# top_type MP: the type of the topmost mount on MP, empty if none (from the
# mount table: never stats MP, which on a dead mount fails or hangs)
top_type() {
	awk -v m="$1" '$5 == m { for (i = 7; $i != "-"; i++); t = $(i + 1) } END { print t }' \
		/proc/self/mountinfo
}
mounted() { [ -n "$(top_type "$1")" ]; }
unmount() {
	fusermount3 -uz "$1" 2>/dev/null || umount -l "$1" 2>/dev/null
}
# (another type there, a volume's own mount in Kubernetes, is mounted over)
if [ "$(top_type "$MP")" = fuse.prefetchfs ]; then
	if ls "$MP" >/dev/null 2>&1; then
		die "prefetchfs is already mounted on $MP: not mounting over it"
	fi
	say "removing the dead mount an earlier run left on $MP"
	unmount "$MP" || die "cannot remove the dead mount on $MP"
fi

# ---- run ------------------------------------------------------------------------
DAEMON=
CHILD=
STOPPING=0
stop() {
	STOPPING=1
	if [ -n "$CHILD" ]; then
		kill -TERM "$CHILD" 2>/dev/null
	elif [ -n "$DAEMON" ]; then
		kill -TERM "$DAEMON" 2>/dev/null
	fi
}
trap stop TERM INT HUP

# wait_for PID: its exit status, waiting through the signals trapped
wait_for() {
	while :; do
		wait "$1"
		st=$?
		kill -0 "$1" 2>/dev/null || return $st
	done
}

# is_ours: the topmost mount on MP is prefetchfs's (not what was there)
is_ours() { [ "$(top_type "$MP")" = fuse.prefetchfs ]; }
# shellcheck disable=SC2086 # -o OPTIONS only when there are some
"$PF" -f ${OPTIONS:+-o "$OPTIONS"} "$SOURCE" "$MP" </dev/null &
DAEMON=$!
[ $STOPPING -eq 1 ] && kill -TERM "$DAEMON"
# ready once the mount table has it (the daemon mounts before it serves)
i=0
while [ $STOPPING -eq 0 ] && ! is_ours; do
	if ! kill -0 "$DAEMON" 2>/dev/null; then
		wait "$DAEMON"
		st=$?
		say "prefetchfs exited (status $st) before mounting $SOURCE on $MP"
		exit $((st ? st : 1))
	fi
	i=$((i + 1))
	if [ $i -gt 600 ]; then
		kill -TERM "$DAEMON"
		wait_for "$DAEMON"
		die "no mount on $MP after 60 s"
	fi
	sleep 0.1
done
[ $STOPPING -eq 1 ] || say "mounted $SOURCE on $MP (pid $DAEMON)"

status=0
if [ $# -gt 0 ]; then
	if [ $STOPPING -eq 0 ]; then
		"$@" <&0 &
		CHILD=$!
		wait_for "$CHILD"
		status=$?
		CHILD=
		[ $STOPPING -eq 1 ] || say "$1 exited with status $status: unmounting"
	fi
	kill -TERM "$DAEMON" 2>/dev/null
fi
wait_for "$DAEMON"
dstatus=$?
if is_ours; then
	say "prefetchfs left its mount on $MP (exit status $dstatus): removing it"
	unmount "$MP"
fi
say "unmounted $MP"
[ $# -gt 0 ] && exit $status
exit $dstatus
