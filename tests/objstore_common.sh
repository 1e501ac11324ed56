# The faultd helpers the object-store pin tests share
# (tests/mount_objstore.sh, tests/mount_objstore_pins.sh,
# tests/mount_lazypin.sh): source it after lib.sh and servers.sh, whose
# faultd_start starts the server.
#   fault URL RULE / reset URL / nlog URL EXPR  servers.sh's faultd_fault /
#                             faultd_reset / faultd_log (add a fault rule /
#                             clear rules and log / EXPR over the log)
#   size_of FILE              its size (stat)
#   rd1 MNT FILE OFF LEN REF [NEW]  one pread under guard: "ok", "short",
#                             "wrong", "new" or "errno N", and its seconds
#   lsd MNT SECS DIR          os.listdir under guard: the number of entries
#                             or "errno N", and its seconds
# K64 (64 KiB) and SMALL (mount options: no prefetch, 64 KiB blocks).
K64=65536
SMALL="prefetch=off,fetch_size=64K,block_size=64K"

fault() { faultd_fault "$@"; }
reset() { faultd_reset "$@"; }
nlog() { faultd_log "$@"; }
size_of() { stat -c %s "$1"; }

# pread.py FILE OFF LEN REF: "ok", "short", "wrong", "new" (bytes of NEW,
# if given) or "errno N", and the seconds it took
cat >"$WORK/pread.py" <<'PY'
import os, sys, time
f, off, n, ref = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
new = open(sys.argv[5], "rb").read() if len(sys.argv) > 5 else None
t = time.monotonic()
fd = os.open(f, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
want = open(ref, "rb").read()[off:off + n]
try:
    b = os.pread(fd, n, off)
    r = "ok" if b == want else "short" if want.startswith(b) else \
        "new" if new and b == new[off:off + n] else "wrong"
except OSError as e:
    r = "errno %d" % e.errno
print("%s %.1f" % (r, time.monotonic() - t))
PY
rd1() { guard "$1" 40 python3 "$WORK/pread.py" "${@:2}"; }
lsd() {
	guard "$1" "$2" python3 -c 'import os, sys, time
t = time.monotonic()
try:
    r = "%d" % len(os.listdir(sys.argv[1]))
except OSError as e:
    r = "errno %d" % e.errno
print("%s %.1f" % (r, time.monotonic() - t))' "$3"
}
