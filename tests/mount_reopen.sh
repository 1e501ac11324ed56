#!/bin/bash
# A file of the source replaced by one of another size while a reader of the
# old one still holds it open (default options: the kernel caches
# attributes for long).  A new open must get the new version at once: its
# size and every byte, although the old handle is open (the daemon used to
# give it the old version after waiting 100 ms for the old handle to go).
# The old handle, read after the new open, must give the old bytes or fail
# with EIO, never bytes of the new version.  Both kinds of replacement:
# by rename (a new file) and in place (truncated and rewritten); larger
# and smaller.  12 rounds; the open times are printed (not checked: the
# machine is shared).
#
# The old handle is read before the new one: the kernel gives both one page
# cache, so pages the new reader brought in would be what the old one reads.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools "$PF"

SRC=$WORK/src
M=$WORK/mnt
mkdir -p "$SRC"
pf_mount "$SRC" "$M" || { fail "mount"; finish; }

timeout 120 python3 - "$SRC" "$M" 12 >"$WORK/reopen.log" 2>&1 <<'PY'
import errno, os, sys, time
src, mnt, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
MiB, K = 1 << 20, 1 << 10
bad = 0
opens = []
old_eio = old_bytes = 0
for i in range(rounds):
    name = "r%03d.bin" % i
    grow = i % 2 == 0
    old = os.urandom(3 * MiB + 777)
    new = os.urandom((5 * MiB + 5) if grow else (MiB + 3))
    with open(os.path.join(src, name), "wb") as f:
        f.write(old)
    # the old version held open, its start read
    fo = os.open(os.path.join(mnt, name), os.O_RDONLY)
    if os.pread(fo, 64 * K, 0) != old[:64 * K]:
        sys.exit("round %d: first version not read back" % i)
    if i % 4 < 2:
        tmp = os.path.join(src, ".tmp")
        with open(tmp, "wb") as f:
            f.write(new)
        os.rename(tmp, os.path.join(src, name))
        how = "renamed"
    else:
        with open(os.path.join(src, name), "r+b") as f:
            f.truncate(0)
            f.write(new)
        how = "in place"
    t0 = time.monotonic()
    fn = os.open(os.path.join(mnt, name), os.O_RDONLY)
    opens.append(time.monotonic() - t0)
    # the old handle: old bytes or EIO
    got, err = b"", 0
    off = 64 * K
    try:
        while True:
            b = os.pread(fo, 256 * K, off)
            if not b:
                break
            got += b
            off += len(b)
    except OSError as e:
        err = e.errno
    old_eio += err == errno.EIO
    old_bytes += err == 0
    if err not in (0, errno.EIO) or got != old[64 * K:64 * K + len(got)]:
        bad += 1
        print("round %d (%s): the old handle read %d bytes after 64 KiB, "
              "%s, error %s" % (i, how, len(got),
                                "old bytes" if got == old[64 * K:][:len(got)]
                                else "NOT the old bytes", err))
    # the new handle: the new version, whole
    size = os.fstat(fn).st_size
    data = b""
    while True:
        b = os.read(fn, 1 * MiB)
        if not b:
            break
        data += b
    if size != len(new) or data != new:
        bad += 1
        print("round %d (%s): the new open saw size %d, read %d bytes (%s); "
              "the new version has %d, the old %d" % (
                  i, how, size, len(data),
                  "the new bytes" if data == new else
                  "the OLD bytes" if data == old else "neither version",
                  len(new), len(old)))
    os.close(fo)
    os.close(fn)
    # with the old handle gone, an open sees the new version too
    with open(os.path.join(mnt, name), "rb") as f:
        if f.read() != new:
            bad += 1
            print("round %d (%s): a later open did not read the new version"
                  % (i, how))
opens.sort()
print("rounds=%d bad=%d; the old handle: EIO %d times, old bytes to its end "
      "%d times; open of the replaced file: median %.1f ms, max %.1f ms"
      % (rounds, bad, old_eio, old_bytes, 1000 * opens[len(opens) // 2],
         1000 * opens[-1]))
sys.exit(1 if bad else 0)
PY
rc=$?
cat "$WORK/reopen.log"
what="replaced while held open: new opens get the new version,"
what+=" the old handle old bytes or EIO (12 rounds)"
check "$what" test $rc -eq 0
pf_umount "$M"
finish
