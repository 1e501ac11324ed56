#!/bin/bash
# tests/run: parallel
# The plan channel and the stats of a mount shared with -o allow_other
# (issue 28).  Run as root with cache_dir; the other user is nobody:
#   1. nobody's plan names root's 0600 file, a file in a 0700 directory,
#      a readable file and one that does not exist: the first two count as
#      missing, as the last; only the readable file is fetched; neither
#      secret reaches memory or the disk cache
#   2. the stats as nobody sees them: the totals and its own plan, no path
#      (no stream, no fill root) and not root's plan; root sees both plans
#      and the streams
#   3. nobody opens plan handles until refused: EMFILE after its share,
#      and root, the mount's owner, still opens a plan
#   4. four plans of nobody's, a million lines each: refused past their
#      share of the entries (ENOSPC), the daemon's memory stays within
#      max_memory's quarter (not with a sanitizer: its memory is not the
#      daemon's)
#   5. the warm file (prefetchfs-warm's channel) as nobody: root's 0600
#      file and the file in the 0700 directory fail as the absent one
#      ("No such file or directory"), nothing of them is read; nobody's
#      warm-ups are refused past its share (EMFILE)
# With PF_BIN=<a build before issue 28> every section fails.
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools
if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
	echo "needs root and the user nobody"
	exit 77
fi
chmod 711 "$WORK"
SRC=$WORK/src
M=$WORK/mnt
C=$WORK/cache
mkdir -p "$SRC/priv" "$M"
MARK1="ROOT-ONLY-$$-$RANDOM"
MARK2="HIDDEN-$$-$RANDOM"
{ echo "$MARK1"; head -c 300000 /dev/urandom; } >"$SRC/secret.bin"
chmod 600 "$SRC/secret.bin"
{ echo "$MARK2"; head -c 300000 /dev/urandom; } >"$SRC/priv/hidden.bin"
chmod 644 "$SRC/priv/hidden.bin"
chmod 700 "$SRC/priv"
mkfile "$SRC/pub.bin" 200000
chmod 644 "$SRC/pub.bin"
PUB=200000
# next_file=off: root's own read of pub.bin (section 2) would otherwise
# have the daemon read the next names ahead for root, secret.bin among
# them, and put its bytes in the (root-only) cache; this test is about what
# another user's plans and warm-ups make the daemon read
pf_mount_ready "$SRC" "$M" -o "allow_other,cache_dir=$C,cache_size=32M,max_memory=64M,next_file=off" ||
	{ fail "mount"; finish; }
PLAN=$M/.prefetchfs/plan
as_nobody() { runuser -u nobody -- "$@"; }
# holder WHO NAME PLAN-TEXT: WHO (nobody or root) writes a plan and holds
# its handle open until $WORK/NAME.done exists
holder() {
	local who=$1 name=$2 text=$3 cmd
	cmd=(python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
os.write(fd, sys.argv[2].encode())
open(sys.argv[3] + ".ready", "w").close()
while not os.path.exists(sys.argv[3] + ".done"):
    time.sleep(0.05)
os.close(fd)' "$PLAN" "$text" "$WORK/pub/$name")
	if [ "$who" = nobody ]; then as_nobody "${cmd[@]}"; else "${cmd[@]}"; fi
}
mkdir -m 777 "$WORK/pub"
wait_file() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
# the stats as nobody reads them
nstats() { as_nobody cat "$M/.prefetchfs/stats"; }

# ---- 1. a plan of nobody's -------------------------------------------------------

check "1. nobody cannot read root's 0600 file through the mount" \
	eval "! as_nobody cat '$M/secret.bin' >/dev/null 2>&1"
holder nobody n1 $'secret.bin\npriv/hidden.bin\npub.bin\nnone.bin\n' &
check "1. nobody's plan is written" wait_file "$WORK/pub/n1.ready"
nstats >"$WORK/n1.json"
stats_check "1. the two secrets count as missing, as the absent file" "$WORK/n1.json" \
	"len(s['plans']) == 1 and s['plans'][0]['declared'] == 4 and s['plans'][0]['missing'] == 3"
# what the plan fetches, it fetches within a few seconds: wait for pub.bin
for ((i = 0; i < 100; i++)); do
	[ "$(stats_eval "$M" "t['bytes_fetched'] >= $PUB")" = True ] && break
	sleep 0.1
done
sleep 1	# anything else it would fetch comes with it
stats_check "1. only the readable file was fetched" "$M" "t['bytes_fetched'] == $PUB"
check "1. neither secret is in the disk cache" \
	eval "! grep -a -q -e '$MARK1' -e '$MARK2' '$C/data'"
touch "$WORK/pub/n1.done"
wait

# ---- 2. the stats as each one sees them -----------------------------------------

cat "$M/pub.bin" >/dev/null		# root's stream
holder root r2 $'pub.bin\n' &
holder nobody n2 $'pub.bin\nnone.bin\n' &
wait_file "$WORK/pub/r2.ready" && wait_file "$WORK/pub/n2.ready" || fail "2. plans written"
nstats >"$WORK/n2.json"
stats_check "2. nobody sees its own plan, not root's" "$WORK/n2.json" \
	"len(s['plans']) == 1 and s['plans'][0]['declared'] == 2"
stats_check "2. nobody sees no stream, no path" "$WORK/n2.json" \
	"s['streams'] == [] and s['fill']['root'] == ''"
stats_check "2. nobody sees the totals" "$WORK/n2.json" "t['bytes_fetched'] >= $PUB"
stats_check "2. root sees both plans and the stream" "$M" \
	"len(s['plans']) == 2 and any(x['file'] == 'pub.bin' for x in s['streams'])"
touch "$WORK/pub/r2.done" "$WORK/pub/n2.done"
wait

# ---- 3. plan handles -------------------------------------------------------------

as_nobody python3 -c '
import errno, os, sys, time
fds, err = [], 0
for i in range(300):
    try:
        fds.append(os.open(sys.argv[1], os.O_WRONLY))
    except OSError as e:
        err = e.errno
        break
print(len(fds), errno.errorcode.get(err, err))
sys.stdout.flush()
open(sys.argv[2] + ".ready", "w").close()
while not os.path.exists(sys.argv[2] + ".done"):
    time.sleep(0.05)' "$PLAN" "$WORK/pub/n3" >"$WORK/n3.out" &
wait_file "$WORK/pub/n3.ready" || fail "3. nobody's handles"
read -r got why <"$WORK/n3.out"
echo "nobody opened $got plan handles, then $why"
check "3. nobody is refused past its share (EMFILE)" [ "${got:-0}" -lt 256 ] && [ "$why" = EMFILE ]
check "3. root, the owner, still opens a plan" \
	python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_WRONLY))' "$PLAN"
touch "$WORK/pub/n3.done"
wait

# ---- 4. nobody's plans and the daemon's memory -----------------------------------

pid=$(pf_pid "$M")
rss0=$(rss_kb "$pid")
as_nobody python3 -c '
import errno, os, sys, time
line = b"pub.bin\n"
text = line * 1000000
fds, res = [], []
for i in range(4):
    fd = os.open(sys.argv[1], os.O_WRONLY)
    fds.append(fd)
    off = 0
    try:
        while off < len(text):
            off += os.pwrite(fd, text[off:off + (1 << 20)], off)
        res.append("ok")
    except OSError as e:
        res.append(errno.errorcode.get(e.errno, e.errno))
print(" ".join(res))
sys.stdout.flush()
open(sys.argv[2] + ".ready", "w").close()
while not os.path.exists(sys.argv[2] + ".done"):
    time.sleep(0.05)' "$PLAN" "$WORK/pub/n4" >"$WORK/n4.out" &
wait_file "$WORK/pub/n4.ready" || fail "4. nobody's plans"
rss1=$(rss_kb "$pid")
echo "four plans of a million lines: $(cat "$WORK/n4.out"); daemon RSS ${rss0} KiB -> ${rss1} KiB"
check "4. refused past their share (ENOSPC)" grep -q ENOSPC "$WORK/n4.out"
if sanitized; then
	echo "(a sanitizer build: its memory is not compared)"
else
	check "4. the daemon grew by less than 16 MiB ($(((rss1 - rss0) / 1024)) MiB)" \
		[ $((rss1 - rss0)) -lt $((16 << 10)) ]
fi
check "4. root still opens a plan" \
	python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_WRONLY))' "$PLAN"
touch "$WORK/pub/n4.done"
wait

# ---- 5. warm-ups of nobody's -----------------------------------------------------

before=$(stats_eval "$M" "t['bytes_fetched']")
as_nobody python3 -c '
import json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, b"secret.bin\npriv/hidden.bin\nnone.bin\n")
for i in range(200):
    st = json.loads(os.pread(fd, 4096, 0))
    if st["active"] == 0:
        break
    time.sleep(0.05)
print(json.dumps(st))
fds = []
try:
    for i in range(100):
        fds.append(os.open(sys.argv[1], os.O_RDWR))
    print("opened", len(fds))
except OSError as e:
    print("opened", len(fds), e.strerror)' "$M/.prefetchfs/warm" >"$WORK/n5.out" 2>&1
cat "$WORK/n5.out"
check "5. the three fail alike" grep -q '"failed": 3' "$WORK/n5.out"
# the first failure in time is said, whichever of the three it was
check "5. as missing files" \
	grep -Eq '"error": "(secret\.bin|priv/hidden\.bin|none\.bin): No such file or directory"' \
	"$WORK/n5.out"
stats_check "5. nothing of them was read" "$M" "t['bytes_fetched'] == $before"
check "5. neither secret is in the disk cache" \
	eval "! grep -a -q -e '$MARK1' -e '$MARK2' '$C/data'"
check "5. nobody's warm-ups are capped (EMFILE)" grep -q "Too many open files" "$WORK/n5.out"

finish
