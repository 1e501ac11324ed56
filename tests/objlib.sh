# Helpers of the object-storage mount tests (tests/mount_http.sh,
# tests/mount_s3.sh).  Source it after tests/lib.sh; uses $M, the mount
# the current checks run on.
#   clean_log MNT [EXPECTED-ERE]   MNT's daemon log has no error lines
#                                  (but those matching EXPECTED-ERE)
#   g CMD...                       CMD under guard (40 s) on $M
#   rc_check WHAT CMD...           CMD (under g) exits 0
#   drop FILE...                   evict FILEs' page cache (under g)
#   tree_of DIR                    "TYPE SIZE PATH" of everything under DIR
#   errno_checks TAG <LINES        "ERRNO WHAT<TAB>PYTHON-STMT" a line:
#                                  STMT (m is $M) fails with ERRNO
#   bad_mount WHAT ERE SECS SRC [opts...]  the mount fails quickly with
#                                  one line matching ERE
#   replaced_read FILE V1 V2 CMD...  FILE (on a mount) holds V1; open it,
#                                  read, run CMD (makes it V2), read
#                                  further: EIO, never V2's bytes

# tree_of DIR: every path under DIR with its type and size, sorted
tree_of() {
	(cd "$1" && find . -mindepth 1 -printf '%y %s %p\n' |
		awk '$1 == "d" { $2 = "-" } { print }' | LC_ALL=C sort)
}

# clean_log MNT [EXPECTED-ERE]: the log of MNT's daemon has no error line
# (the daemon's "prefetchfs: mounted ..." and "unmounting" are all a quiet
# run prints), but those matching EXPECTED-ERE
clean_log() {
	local log="$WORK/daemon.$(basename "$1").log" exp=${2:-}
	check "daemon log of $(basename "$1") says it mounted" grep -q 'prefetchfs: mounted' "$log"
	grep -iE 'fail|error|warn|denied|refused|timed? ?out' "$log" |
		{ if [ -n "$exp" ]; then grep -vE -- "$exp"; else cat; fi; } >"$WORK/badlines"
	if [ -s "$WORK/badlines" ]; then
		fail "daemon log of $(basename "$1") has unexpected lines:"
		head -20 "$WORK/badlines"
	else
		ok "daemon log of $(basename "$1") has no failed/error lines"
	fi
}

g() { guard "$M" 40 "$@"; }

# rc_check WHAT COMMAND...: COMMAND exits 0 (its output shown on failure)
rc_check() {
	local what=$1 rc
	shift
	g "$@" >"$WORK/rc.out" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$what"
	else
		fail "$what (exit $rc$([ $rc -eq 124 ] && echo ': HANG, daemon killed'))"
		head -20 "$WORK/rc.out"
	fi
}

drop() { g drop_page_cache "$@" || fail "evict the page cache of $*"; }

# errno_checks TAG: for each line "ERRNO WHAT<TAB>PYTHON-STMT" of stdin, one
# check that STMT (m is the mount $M) raises OSError ERRNO; one python runs
# them all (each python start costs a second on a loaded machine)
errno_checks() {
	local line done=0
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "[$1] ${line#ok }" ;;
		"done") done=1 ;;
		*) fail "[$1] ${line#FAIL: }" ;;
		esac
	done < <(python3 -c '
import errno, os, sys
m = sys.argv[1]
for line in sys.stdin.read().splitlines():
    if not line.strip():
        continue
    want, rest = line.split(" ", 1)
    what, stmt = rest.split("\t", 1)
    try:
        exec(stmt)
        print("FAIL: %s: no error (want %s)" % (what, want))
    except OSError as e:
        got = errno.errorcode.get(e.errno, str(e.errno))
        if got == want:
            print("ok %s: %s" % (what, want))
        else:
            print("FAIL: %s: %s (want %s)" % (what, got, want))
    except Exception as e:
        print("FAIL: %s: %r (want %s)" % (what, e, want))
print("done")
' "$M" 2>&1)
	[ $done -eq 1 ] || fail "[$1] errno checks: the checker did not finish"
}

# bad_mount WHAT WORD-REGEX SECS SOURCE [options...]: the mount fails within
# SECS seconds with exactly one line on stderr matching WORD-REGEX
# (case-insensitive), a non-zero exit and no mount left
bad_mount() {
	local what=$1 re=$2 secs=$3 src=$4 rc t0 t1 mnt=$WORK/mnt-bad
	shift 4
	mkdir -p "$mnt"
	t0=$(date +%s%N)
	timeout 60 "$PF" "$@" "$src" "$mnt" >"$WORK/bad.out" 2>"$WORK/bad.err"
	rc=$?
	t1=$(date +%s%N)
	if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
		fail "$what: exit status $rc (expected a failure)"
	else
		ok "$what: exit status $rc"
	fi
	if one_line_err "$WORK/bad.err"; then
		ok "$what: one line on stderr: $(cat "$WORK/bad.err")"
	else
		fail "$what: expected one line 'prefetchfs: ...' on stderr, got:"
		cat "$WORK/bad.err"
	fi
	check "$what: the message matches /$re/" grep -qiE -- "$re" "$WORK/bad.err"
	check "$what: fails in under $secs s ($(( (t1 - t0) / 1000000 )) ms)" \
		test $(( (t1 - t0) / 1000000 )) -lt $((secs * 1000))
	if mountpoint -q "$mnt"; then
		fail "$what: a mount was left"
		fusermount3 -u "$mnt"
	else
		ok "$what: no mount left"
	fi
}

# replaced_read FILE V1 V2 CMD...: open FILE (whose content is V1, on a
# mount with prefetch=off), read its first MiB, run CMD (which replaces the
# object by V2, same size), then read at 40 MiB, at 44 MiB + 12345 (not
# fetched yet: each must fail with EIO) and at 0 (cached: the old bytes or
# EIO).  Never V2's bytes, never bytes of neither.  Exit 0 if so.
replaced_read() {
	python3 - "$@" <<'PY'
import errno, os, subprocess, sys
mnt, v1, v2 = sys.argv[1:4]
MiB = 1 << 20
old = open(v1, "rb").read()
new = open(v2, "rb").read()
fd = os.open(mnt, os.O_RDONLY)
a = os.pread(fd, MiB, 0)
if a != old[:MiB]:
    sys.exit("the first MiB is not the first version's")
subprocess.run(sys.argv[4:], check=True)
bad = 0
for off in (40 * MiB, 44 * MiB + 12345, 0):
    try:
        b = os.pread(fd, MiB, off)
    except OSError as e:
        print("read at %d: %s" % (off, errno.errorcode.get(e.errno)))
        if e.errno != errno.EIO:
            bad += 1
        continue
    if b == old[off:off + len(b)] and off == 0:
        print("read at %d: old bytes (cached)" % off)
    elif b == old[off:off + len(b)]:
        print("read at %d: old bytes: the object was not checked (want EIO)" % off)
        bad += 1
    elif b == new[off:off + len(b)]:
        print("read at %d: NEW bytes in a file opened on the old version" % off)
        bad += 1
    else:
        print("read at %d: bytes of neither version" % off)
        bad += 1
os.close(fd)
sys.exit(1 if bad else 0)
PY
}
