#!/bin/bash
# The user's side of the mount (issues 16 and 10): what peers refuse is
# refused in one line naming the fix (a mountpoint already mounted, one not
# empty, a stale one, an unsupported scheme, credentials in the URL, more
# memory than there is, a fetch too large for one vectored read, an
# unverifiable certificate, a non-root mount that cannot be made); the log
# can go to a file and the mount says where; the stats file has a real size
# and time and, like the trace, is private to the owner unless allow_other,
# which brings default_permissions; a dataset entry named .prefetchfs does
# not take the stats directory's place; peers' option names work;
# prefetchfs-stat fits 80 columns on a terminal.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
STAT=$TOP/prefetchfs-stat
need_tools "$STAT"

SRC=$WORK/src
mkdir -p "$SRC/sub"
mkfile "$SRC/a.bin" $((4 * 1048576))
printf 'hello\n' >"$SRC/hello.txt"
printf 'top secret\n' >"$SRC/secret.txt"
chmod 600 "$SRC/secret.txt"

# start_err WHAT RC WORD... -- ARGS...: prefetchfs ARGS exits RC with one
# line "prefetchfs: ..." on stderr holding every WORD, and nothing mounted
start_err() {
	local what=$1 want=$2 rc w
	shift 2
	local words=()
	while [ "$1" != "--" ]; do words+=("$1"); shift; done
	shift
	timeout 30 "$PF" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	check "$what: exit status $rc (want $want)" test "$rc" -eq "$want"
	if one_line_err "$WORK/err"; then
		ok "$what: one line: $(cat "$WORK/err")"
	else
		fail "$what: want one line 'prefetchfs: ...' on stderr, got:"
		cat "$WORK/err"
	fi
	for w in "${words[@]}"; do
		check "$what: the line says '$w'" grep -qF -- "$w" "$WORK/err"
	done
}

# ---- refused before anything is mounted -----------------------------------
M=$WORK/mnt
mkdir -p "$M"
start_err "ftp:// source" 2 "'ftp://' is not supported" "http://" "https://" "s3://" -- \
	ftp://127.0.0.1/data "$M"
start_err "credentials in the URL" 2 "must not hold credentials" "AWS_ACCESS_KEY_ID" "profile" -- \
	https://bob:hunter2@127.0.0.1:1/data/ "$M"
check "credentials in the URL: the password is not repeated" bash -c '! grep -q hunter2 "$1"' _ "$WORK/err"
start_err "max_memory=100T" 2 "max_memory=100T" "machine's memory" -- \
	-o max_memory=100T "$SRC" "$M"
start_err "block_size=4K,fetch_size=8M (over IOV_MAX blocks)" 2 "fetch_size=8M" "block_size" "fetch_size=2M" -- \
	-o block_size=4K,fetch_size=8M "$SRC" "$M"
mkdir -p "$WORK/full"
touch "$WORK/full/x" "$WORK/full/y"
start_err "non-empty mountpoint" 1 "is not empty" "-o nonempty" -- "$SRC" "$WORK/full"
check "non-empty mountpoint: not mounted" bash -c '! mountpoint -q "$1"' _ "$WORK/full"
check "nothing was mounted by the refused starts" bash -c '! mountpoint -q "$1"' _ "$M"

# ---- -o nonempty, log_file, and where the log goes ---------------------------
MOUNTS+=("$WORK/full")
"$PF" -o nonempty,log_file="$WORK/pf.log",log_level=debug "$SRC" "$WORK/full" >"$WORK/out" 2>"$WORK/err"
check "-o nonempty mounts on a non-empty directory" mountpoint -q "$WORK/full"
p=$(pf_pid "$WORK/full")
[ -n "$p" ] && DAEMON_PIDS+=("$p")
check "-o nonempty: the source is shown" grep -qx hello "$WORK/full/hello.txt"
check "the mount says where the log goes: $(cat "$WORK/err")" \
	grep -qx "prefetchfs: mounted on $WORK/full; the log goes to $WORK/pf.log" "$WORK/err"
check "-o log_file: the log is written there" grep -q "mounted posix:" "$WORK/pf.log"
check "-o log_file: the file is 0600" test "$(stat -c %a "$WORK/pf.log")" = 600
pf_umount "$WORK/full"

# ---- mounting twice, and over a daemon that was killed -----------------------
pf_mount "$SRC" "$M" || fail "mount"
start_err "a second mount on the same mountpoint" 1 "already a mount point" "fusermount3 -u" -- "$SRC" "$M"
check "a second mount: one mount only" \
	test "$(awk -v m="$M" '$5 == m' /proc/self/mountinfo | wc -l)" -eq 1
check "a second mount: one daemon only" test "$(pgrep -c -f -- "$(re_quote "$PF") .* $(re_quote "$M")$")" -eq 1

# ---- the stats file -----------------------------------------------------------
cat "$M/a.bin" >/dev/null
size=$(stat -c %s "$M/.prefetchfs/stats")
len=$(wc -c <"$M/.prefetchfs/stats")
check "the stats file has a size ($size; a read gives $len)" \
	bash -c '[ "$1" -gt 200 ] && [ $(( $1 - $2 )) -lt 400 ] && [ $(( $2 - $1 )) -lt 400 ]' _ "$size" "$len"
# (the mtime first, then the clock: the other way round the second can
# tick in between and the age come out -1)
mtime=$(stat -c %Y "$M/.prefetchfs/stats")
age=$(( $(date +%s) - mtime ))
check "the stats file's mtime is the snapshot's (${age}s ago)" test "$age" -ge 0 -a "$age" -lt 60
check "the stats file is 0400 without allow_other" test "$(stat -c %a "$M/.prefetchfs/stats")" = 400
check "the stats directory is 0500 without allow_other" test "$(stat -c %a "$M/.prefetchfs")" = 500

# ---- prefetchfs-stat on an 80-column terminal ---------------------------------
# a reader keeps a stream alive while the view runs on a pty of 24x80
python3 - "$STAT" "$M" "$WORK/view.txt" <<'PY' >"$WORK/view.log" 2>&1
import fcntl, os, pty, re, struct, sys, termios, threading, time
stat, mnt, out = sys.argv[1:4]
def reader():
    for _ in range(40):
        with open(os.path.join(mnt, "a.bin"), "rb") as f:
            while f.read(1 << 20):
                time.sleep(0.005)
t = threading.Thread(target=reader, daemon=True)
t.start()
pid, fd = pty.fork()
if pid == 0:
    os.execv(stat, [stat, "-n", "3", "-i", "0.3", mnt])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
buf = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    buf += chunk
os.waitpid(pid, 0)
text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", buf.decode()).replace("\r", "")
open(out, "w").write(text)
PY
long=$(awk 'length($0) > 80' "$WORK/view.txt" | wc -l)
check "prefetchfs-stat on an 80-column pty: no line is longer ($long are)" test "$long" -eq 0
check "prefetchfs-stat at 80 columns: the stream table keeps its last column" \
	grep -qE '^FILE .*MB/s +FETCH/s$' "$WORK/view.txt"
check "prefetchfs-stat at 80 columns: a stream of a.bin" grep -qE '^a\.bin +[0-9]+ +seq ' "$WORK/view.txt"
[ "$long" -eq 0 ] || cat "$WORK/view.txt"

# ---- the daemon is killed: the next mount says what to do ------------------------
kill_daemon_only() {
	local p
	p=$(pf_pid "$1")
	[ -n "$p" ] && kill -9 "$p" && wait_gone "$p" 50
}
kill_daemon_only "$M"
start_err "a mount over a killed daemon's mountpoint" 1 "fusermount3 -u $M" "auto_unmount" -- "$SRC" "$M"
fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M"
check "after fusermount3 -u, the mountpoint takes a mount again" pf_mount "$SRC" "$M"
pf_umount "$M"

# ---- a dataset entry named .prefetchfs --------------------------------------------
SPOOF=$WORK/spoof
mkdir -p "$SPOOF/.prefetchfs"
printf '{"fake": true}\n' >"$SPOOF/.prefetchfs/stats"
printf 'data\n' >"$SPOOF/x.txt"
M2=$WORK/mnt-spoof
MOUNTS+=("$M2")
mkdir -p "$M2"
"$PF" -o log_file="$WORK/spoof.log" "$SPOOF" "$M2" 2>/dev/null
p=$(pf_pid "$M2")
[ -n "$p" ] && DAEMON_PIDS+=("$p")
ls -la "$M2" >"$WORK/ls.txt" 2>&1	# readdirplus: dentries for every entry
check "the source's .prefetchfs is not listed" bash -c '! grep -q "\.prefetchfs" "$1"' _ "$WORK/ls.txt"
check "the stats directory wins over the source's .prefetchfs" \
	bash -c 'grep -q "\"totals\"" "$1/.prefetchfs/stats" && ! grep -q fake "$1/.prefetchfs/stats"' _ "$M2"
check "the hidden entry is logged once" test "$(grep -c "entry '.prefetchfs' at its root" "$WORK/spoof.log")" -eq 1
pf_umount "$M2"

# ---- allow_other: default_permissions, stats readable by all -------------------------
chmod 755 "$WORK"
M3=$WORK/mnt-shared
pf_mount "$SRC" "$M3" -o allow_other || fail "mount -o allow_other"
check "allow_other brings default_permissions (/proc/mounts)" \
	bash -c 'awk -v m="$1" "\$2 == m" /proc/mounts | grep -q default_permissions' _ "$M3"
check "allow_other: another user reads a 0644 file" \
	bash -c 'setpriv --reuid=65534 --regid=65534 --clear-groups cat "$1/hello.txt" >/dev/null' _ "$M3"
check "allow_other: another user cannot read a file that is 0600 in the source" \
	bash -c '! setpriv --reuid=65534 --regid=65534 --clear-groups cat "$1/secret.txt" 2>/dev/null' _ "$M3"
check "allow_other: the owner still reads it" grep -qx "top secret" "$M3/secret.txt"
check "allow_other: the stats file is 0444" test "$(stat -c %a "$M3/.prefetchfs/stats")" = 444
pf_umount "$M3"

# ---- a mount as a user who may not mount there: one line ------------------------------
M4=$WORK/mnt-root-owned
mkdir -p "$M4"
chmod 755 "$M4"
setpriv --reuid=65534 --regid=65534 --clear-groups "$PF" "$SRC" "$M4" >"$WORK/out" 2>"$WORK/err"
rc=$?
check "non-root mount on a root-owned directory fails (exit $rc)" test $rc -ne 0
if one_line_err "$WORK/err" && grep -q "cannot mount on" "$WORK/err"; then
	ok "non-root mount: one line: $(cat "$WORK/err")"
else
	fail "non-root mount: want one line 'prefetchfs: cannot mount on ...', got:"
	cat "$WORK/err"
fi
mountpoint -q "$M4" && fusermount3 -u "$M4"
chmod 700 "$WORK"

# ---- the trace file is the owner's ------------------------------------------------------
M5=$WORK/mnt-trace
(umask 022 && pf_mount "$SRC" "$M5" -o trace="$WORK/t.json") || fail "mount -o trace"
check "the trace file is 0600" test "$(stat -c %a "$WORK/t.json")" = 600
pf_umount "$M5"

# ---- peers' names: --foreground, -o url= ---------------------------------------------------
M6=$WORK/mnt-fg
mkdir -p "$M6"
MOUNTS+=("$M6")
"$PF" --foreground "$SRC" "$M6" >"$WORK/fg.log" 2>&1 &
fgpid=$!
DAEMON_PIDS+=("$fgpid")
for _ in $(seq 100); do mountpoint -q "$M6" && break; sleep 0.1; done
check "--foreground (mountpoint-s3's name) mounts and stays in the foreground" \
	bash -c 'mountpoint -q "$1" && kill -0 "$2"' _ "$M6" "$fgpid"
pf_umount "$M6"
wait "$fgpid" 2>/dev/null
start_err "-o url= (s3fs's endpoint) is taken as endpoint" 1 "endpoint, region" -- \
	-o url=http://127.0.0.1:9 http://127.0.0.1:9/ "$M"

# ---- https with a certificate nobody vouches for ------------------------------------------
if nginx_start "$SRC" --tls >/dev/null; then
	start_err "https, private CA not given" 1 "-o cacert=FILE" "-o insecure" "certificate" -- \
		-o retries=0 "$NGINX_URL" "$M"
	check "https, private CA not given: no 'Input/output error' prefix" \
		bash -c '! grep -q "Input/output error" "$1"' _ "$WORK/err"
	check "https: -o cacert= mounts" pf_mount "$NGINX_URL" "$M" -o cacert="$NGINX_CACERT"
	pf_umount "$M"
else
	fail "nginx --tls did not start"
fi

# ---- examples show their defaults ----------------------------------------------------------
nodef=
for ex in "$TOP"/examples/*.py; do
	# a module (prefetchfs_hints.py) has no command line
	grep -q '^import argparse' "$ex" || continue
	/usr/bin/python3 "$ex" --help 2>&1 | grep -q "(default: " || nodef="$nodef $(basename "$ex")"
done
check "examples/*.py --help show defaults${nodef:+ (not:$nodef)}" test -z "$nodef"


# hit% is hits / READs: a READ that waited for read-ahead in flight is no
# hit (a fake stats file, a directory holding it stands for the mount)
FAKE=$WORK/fake
mkdir -p "$FAKE/.prefetchfs"
cat >"$FAKE/.prefetchfs/stats" <<'EOF2'
{"backend": "posix", "totals": {"reads": 10, "hits": 5, "misses": 0, "waits": 5, "inflight_waits": 5},
 "streams": [{"file": "a.bin", "stream": 1, "pattern": "sequential", "reads": 10, "hits": 5,
  "misses": 0, "waits": 5, "inflight_waits": 5, "wait_ms": 50}]}
EOF2
"$STAT" -n 1 "$FAKE" >"$WORK/hit.out" 2>&1
check "prefetchfs-stat: 5 hits of 10 READs (5 waited) is hit% 50, not 100" \
	grep -qE '^total +10 +50\.0 ' "$WORK/hit.out"
check "prefetchfs-stat: the stream's hit% is 50" \
	grep -qE '^a\.bin .* 50 ' "$WORK/hit.out"

finish
