#!/bin/bash
# A POSIX source cannot be escaped through the mount: a directory of the
# source that the kernel has looked up is replaced by a symlink (to /etc,
# to a directory outside the source, to ..), and every open, read, stat
# and listing the kernel then sends the daemon for that directory stays
# inside the source: no byte and no name of a file outside is served.
# Canary files outside the source (next to it, and /etc/passwd itself)
# are compared with everything read.  The symlinks of the dataset are
# still shown as symlinks, and followed by the kernel, as before.
#
# The directory is held open (a dirfd) across the swap, so that what
# follows reaches the daemon under the directory's old inode, whatever
# the kernel's dentry timeouts; a lookup through the mountpoint's path
# could be answered "symlink" and followed by the kernel itself, outside
# the daemon.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools

SRC=$WORK/src
M=$WORK/mnt
CANARY="CANARY-$$-$RANDOM root:x:0:0:outside the source:/root:/bin/sh"
TARGETS=(/etc "$WORK/outside" ../outside ..)
mkdir -p "$WORK/outside"
for f in passwd secret only-outside; do
	echo "$CANARY $f" >"$WORK/outside/$f"
done
echo "$CANARY parent" >"$WORK/secret"
echo "$CANARY parent" >"$WORK/passwd"
# one directory per swap: the kernel's dentries of one do not answer for
# the next
for i in "${!TARGETS[@]}"; do
	mkdir -p "$SRC/d$i"
	echo "inside the source: passwd" >"$SRC/d$i/passwd"
	echo "inside the source: secret" >"$SRC/d$i/secret"
done
mkdir -p "$SRC/real"
echo "inside the source: real" >"$SRC/real/file"
ln -s real "$SRC/inlink"
ln -s ../outside/secret "$SRC/outlink"

pf_mount "$SRC" "$M" || { fail "mount"; finish; }

# swap DIR TARGET: hold $M/DIR open, replace $SRC/DIR by a symlink to
# TARGET, then read, stat and list through the held directory; prints one
# line per access that reached outside the source ("LEAK ...") or
# "clean N" with the number of accesses tried
swap() {
	python3 - "$M" "$SRC" "$1" "$2" "$CANARY" <<'EOF'
import os, sys
mnt, src, d, target, canary = sys.argv[1:]
canary = canary.encode()
etc_passwd = open("/etc/passwd", "rb").read()
inside = {"passwd", "secret"}
leaks = []
tried = 0

def outside_bytes(b):
    return canary in b or (len(b) > 0 and b == etc_passwd) or b"root:x:0:0:" in b

dfd = os.open(os.path.join(mnt, d), os.O_RDONLY | os.O_DIRECTORY)
# looked up (cached by the kernel) before the swap: the open that follows
# is the pure "between lookup and open" case
os.stat("passwd", dir_fd=dfd)
os.rename(os.path.join(src, d), os.path.join(src, d + ".old"))
os.symlink(target, os.path.join(src, d))
try:
    for name in ("passwd", "secret", "only-outside", "hostname", "group"):
        tried += 1
        try:
            fd = os.open(name, os.O_RDONLY, dir_fd=dfd)
        except OSError:
            pass
        else:
            data = b""
            try:
                while True:
                    b = os.read(fd, 65536)
                    if not b:
                        break
                    data += b
            except OSError:
                pass
            os.close(fd)
            if outside_bytes(data):
                leaks.append("read %s: %r" % (name, data[:60]))
        tried += 1
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            pass
        else:
            if name not in inside:
                leaks.append("stat %s: found (size %d)" % (name, st.st_size))
    tried += 1
    try:
        names = set(os.listdir(dfd))
    except OSError:
        names = set()
    if names - inside:
        leaks.append("listing: %s" % sorted(names - inside)[:8])
finally:
    os.close(dfd)
    os.unlink(os.path.join(src, d))
    os.rename(os.path.join(src, d + ".old"), os.path.join(src, d))
for l in leaks:
    print("LEAK", l)
if not leaks:
    print("clean", tried)
EOF
}

for i in "${!TARGETS[@]}"; do
	out=$(swap "d$i" "${TARGETS[i]}" 2>&1)
	echo "$out" | sed 's/^/  /'
	check "d$i swapped for a symlink to ${TARGETS[i]}: nothing outside served" \
		grep -q '^clean [0-9]' <<<"$out"
done

# the source is whole again, and its symlinks are symlinks, which the
# kernel follows: inside the mount, and (the dataset's own choice) out
check "the swapped directory reads again" \
	grep -qx 'inside the source: passwd' "$M/d0/passwd"
check "a symlink of the dataset is a symlink" test -L "$M/inlink"
check "readlink of it" test "$(readlink "$M/inlink")" = real
check "followed by the kernel inside the mount" \
	grep -qx 'inside the source: real' "$M/inlink/file"
check "a symlink pointing out is shown as it is" \
	test "$(readlink "$M/outlink")" = ../outside/secret

finish
