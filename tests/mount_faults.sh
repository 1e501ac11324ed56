#!/bin/bash
# Faults of an HTTP server under a mount: prefetchfs reads from
# tests/helpers/faultd.py, which injects one fault at a time, and every
# check compares what the reader got with the source byte for byte AND
# looks at faultd's request log for what the daemon asked:
#   1. 500 x2, a connection closed without an answer x2, 500 x2 to the HEAD
#      of open, 500 x2 to a directory listing: retried, byte-exact; a
#      listing that keeps failing fails ls, and lists once the server is back
#   2. 503 SlowDown, 429 with Retry-After: 1 (retried no sooner), a slow
#      answer within timeout= (not given up on)
#   3. a body cut short: resumed from the first missing byte (the cut range
#      is not asked again from its start), with the same If-Match; headers
#      without a body: retried
#   4. a 200 with the whole body for a range (also for a resume): sliced
#   5. a 206 of another range: EIO (never those bytes), a log line, not
#      retried, the mount stays up, the range reads once the server behaves
#   6. the file replaced between two reads of one open file (/_replace,
#      replace_after, and between a cut and its resume): EIO, never new
#      bytes or a mix; a new open reads the new content (the page cache of
#      the old version is not served)
#   7. 500 for ever (GET, HEAD): EIO after exactly 1 + retries tries, in
#      bounded time; 404 -> ENOENT, 403 -> EACCES (at open, or at read when
#      only the GET fails), not retried
#   8. a server that stops answering, or sends headers and no body
#      (timeout=2, retries=1): EIO in bounded time, the mount serves other
#      files; fusermount3 -u during a hung read returns at once; a hung
#      reader killed and the mount unmounted, or SIGTERM to the daemon
#      during a hung read: the daemon exits within seconds (it must not
#      wait out the hung request's timeouts and retries)
#   9. the stats file's "transport" counts retries, resumes, whole bodies
# Small fetches (fetch_size=block_size=64K, prefetch=off) and a reader that
# turns the kernel's read-ahead off (POSIX_FADV_RANDOM) make each pread of
# 64 KiB one READ and one ranged GET.  Each case has files of its own, so
# that no cache (kernel or daemon) hides a request.  The daemons run in the
# foreground (-f) so that their log lines can be checked.  Mount A has
# revalidate=0, so that every open pins its version with a HEAD (the faults
# of 1 and 7 include that HEAD's, and 3 and 6 look at If-Match from the
# first GET on); opens pinned by their first GET (nginx's HTML index
# within revalidate): tests/mount_lazypin.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

# the test runs python3 some hundred times: a version manager's shim (pyenv
# takes most of a second a start) would make it slow; the system's will do
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then
	mkdir -p "$WORK/bin"
	ln -s /usr/bin/python3 "$WORK/bin/python3"
	PATH=$WORK/bin:$PATH
fi
SRC=$WORK/src
ORIG=$WORK/orig
MA=$WORK/mnt-faults
MB=$WORK/mnt-hang
K64=65536
mkdir -p "$SRC" "$ORIG"
mkdir -p "$SRC/sub1" "$SRC/sub2"
for f in c1 c2 c3 c4 c5 c6 c7 c8 c9 c10 c11 c12 c13 c14 c15 c16 c17 c18 c19 \
	c20 c21 c22 h1 h2 h3 h4 h5 h6 sub1/s1 sub2/s2; do
	mkfile "$SRC/$f.bin" $((1 << 20))
done
mkfile "$SRC/c4.bin" $((3 << 20))	# c4: several MiB, cut in the middle
cp "$SRC/c8.bin" "$SRC/c9.bin" "$SRC/c20.bin" "$ORIG/"	# (replaced by the test)

# ---- faultd, the mounts, the reader -----------------------------------------

# fault RULE, reset, log_py EXPR: servers.sh's faultd_fault, faultd_reset
# (no rules, an empty request log), faultd_log (EXPR over the request log:
# L, G(NAME) the GETs of /NAME) on the faultd at $U
fault() { faultd_fault "$U" "$1"; }
reset() { faultd_reset "$U"; }
log_py() { faultd_log "$U" "$1"; }
# log_true EXPR: the EXPR is true of the request log (prints it if not)
log_true() {
	[ "$(log_py "$1")" = True ] && return 0
	echo "  the request log:"
	curl -s "$U/_log" | sed 's/^/  /'
	return 1
}

# rd.py FILE REF STEP...: see its header
cat >"$WORK/rd.py" <<'PY'
# Opens FILE (read-ahead off: POSIX_FADV_RANDOM), runs the steps, prints one
# result per step with the seconds it took:
#   p:OFF:LEN  pread LEN bytes at OFF -> "ok" (REF's bytes there), "short"
#              (a prefix of them), "wrong" (other bytes), "errno N"
#   u:URL      GET URL (a faultd control request) -> "u"
# "open errno N" when the open fails.
import os, sys, time, urllib.request
f, ref = sys.argv[1], sys.argv[2]
t = time.monotonic()
try:
    fd = os.open(f, os.O_RDONLY)
except OSError as e:
    print("open errno %d %.2f" % (e.errno, time.monotonic() - t))
    sys.exit(0)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
want = open(ref, "rb").read()
for s in sys.argv[3:]:
    t = time.monotonic()
    if s.startswith("u:"):
        urllib.request.urlopen(s[2:]).read()
        print("u", flush=True)
        continue
    _, off, n = s.split(":")
    off, n = int(off), int(n)
    try:
        b = os.pread(fd, n, off)
        w = want[off:off + n]
        r = "ok" if b == w else "short" if w.startswith(b) else "wrong"
    except OSError as e:
        r = "errno %d" % e.errno
    print("%s %.2f" % (r, time.monotonic() - t), flush=True)
os.close(fd)
PY
# rd MNT FILE REF STEP...: rd.py under guard (a reader still blocked after
# 40 s is a hang: the daemon is killed); prints the results on one line
rd() {
	local mnt=$1 file=$2 ref=$3
	shift 3
	guard "$mnt" 40 python3 "$WORK/rd.py" "$mnt/$file" "$ref" "$@" | sed ':a;N;$!ba;s/\n/; /g'
}
# result_is "RESULTS" "RESULT; ..." [MAXSECS]: the results of rd, stripped
# of their times, are RESULT; ...; and each took less than MAXSECS (10)
result_is() {
	python3 -c '
import sys
words, times = [], []
for r in sys.argv[1].split(";"):
    w = r.split()
    if w and w[-1][0].isdigit() and "." in w[-1]:
        times.append(float(w.pop()))
    words.append(" ".join(w))
sys.exit(not ("; ".join(words) == sys.argv[2] and all(x < float(sys.argv[3]) for x in times)))' "$1" "$2" "${3:-10}"
}
# readall MNT FILE: cat the whole file under guard, compare with the source
readall() { guard "$1" 40 cmp "$1/$2" "$SRC/$2"; }
# daemon_log MNT: its log file
daemon_log() { echo "$WORK/daemon.$(basename "$1").log"; }
# secs_since T0: seconds (float) since T0 (from now_s)
now_s() { date +%s.%N; }
secs_since() { python3 -c "import sys; print('%.2f' % ($(now_s) - $1))"; }

faultd_start "$SRC" >/dev/null || { fail "faultd start"; finish; }
U=$FAULTD_URL
ok "faultd serves $SRC on $U"
# every mount: small fetches, no prefetch (one pread of 64 KiB, one GET);
# directories listed at their first use (list_ahead=0), where the faults
# set after the mount find them
BASE_OPTS=prefetch=off,fetch_size=64K,block_size=64K,connect_timeout=2,list_ahead=0
OPTS=$BASE_OPTS,retries=3,timeout=2,revalidate=0
pf_mount_ready "$U/" "$MA" -o "$OPTS" || { fail "mount of $U/ on $MA"; finish; }
ok "mounted $U/ on $MA (-o $OPTS)"
RETRIES=3
T_START=$(now_s)

# ---- 1. 500 twice: retried ----------------------------------------------------
reset
fault "path=/c1.bin&method=GET&mode=status:500&count=2"
check "1. 500 x2: the file reads byte-exact" readall "$MA" c1.bin
check "1. 500 x2: the log has the two 500s, each range retried with a 206" \
	log_true '[e["status"] for e in G("c1.bin")].count(500) == 2 and all(any(f["seq"] > e["seq"] and f["range"] == e["range"] and f["status"] == 206 for f in G("c1.bin")) for e in G("c1.bin") if e["status"] == 500)'

reset
fault "path=/c17.bin&method=GET&mode=drop&count=2"
check "1. connection closed without an answer (drop) x2: the file reads byte-exact" readall "$MA" c17.bin
# (not "later in the log": a drop is logged when faultd closes the socket,
# which may come after curl's own retry on a fresh connection)
check "1. drop x2: the dropped ranges were asked again" \
	log_true '[e["status"] for e in G("c17.bin")].count(0) == 2 and all(any(f["range"] == e["range"] and f["status"] == 206 for f in G("c17.bin")) for e in G("c17.bin") if e["status"] == 0)'
reset
fault "path=/c18.bin&method=HEAD&mode=status:500&count=2"
check "1. 500 x2 to the HEAD of open: the open is retried, the file reads byte-exact" readall "$MA" c18.bin
check "1. 500 x2 to HEAD: three HEADs" \
	log_true '[e["status"] for e in L if e["method"] == "HEAD"] == [500, 500, 200]'
reset
fault "path=/sub1/&mode=status:500&count=2"
check "1. 500 x2 to a directory listing: ls works" \
	bash -c "[ \"\$(ls '$MA/sub1')\" = s1.bin ]"
check "1. 500 x2 to a directory listing: listed at the third try" \
	log_true '[e["status"] for e in L if e["path"] == "/sub1/"] == [500, 500, 200]'
reset
fault "path=/sub2/&mode=status:503&count=inf"
check "1. 503 for ever to a directory listing: ls fails" \
	bash -c "! ls '$MA/sub2' >/dev/null 2>&1"
check "1. 503 for ever to a listing: the daemon logged it" \
	grep -qE "cannot list 'sub2/'.*503" "$(daemon_log "$MA")"
reset
check "1. once the server behaves, the directory lists and its file reads" \
	bash -c "[ \"\$(ls '$MA/sub2')\" = s2.bin ] && cmp '$MA/sub2/s2.bin' '$SRC/sub2/s2.bin'"

# ---- 2. 503 SlowDown, 429 with Retry-After: retried -------------------------------
reset
fault "path=/c2.bin&method=GET&mode=status:503&count=1"
r=$(rd "$MA" c2.bin "$SRC/c2.bin" p:0:$K64 p:$((5 * K64)):$K64)
check "2. 503 SlowDown: the preads are byte-exact ($r)" result_is "$r" "ok; ok"
check "2. 503 SlowDown: the log has the 503, then a 206 for its range" \
	log_true '[(e["status"], e["range"]) for e in G("c2.bin")][:2] == [(503, "bytes=0-65535"), (206, "bytes=0-65535")]'
check "2. 503 SlowDown: the daemon logged no failure" \
	bash -c "! grep -q \"c2.bin\" '$(daemon_log "$MA")'"
reset
fault "path=/c3.bin&method=GET&mode=status:429&retry_after=1&count=1"
r=$(rd "$MA" c3.bin "$SRC/c3.bin" p:$K64:$K64)
check "2. 429 Retry-After: 1: the pread is byte-exact ($r)" result_is "$r" "ok"
check "2. 429: the log has the 429, then a 206 for its range" \
	log_true '[(e["status"], e["range"]) for e in G("c3.bin")] == [(429, "bytes=65536-131071"), (206, "bytes=65536-131071")]'
check "2. 429: the retry waited the 1 s of Retry-After ($(log_py '"%.2f s" % (G("c3.bin")[1]["t"] - G("c3.bin")[0]["t"])'))" \
	log_true 'G("c3.bin")[1]["t"] - G("c3.bin")[0]["t"] >= 0.95'

reset
fault "path=/c22.bin&method=GET&mode=delay:1300&count=1"
r=$(rd "$MA" c22.bin "$SRC/c22.bin" p:$((2 * K64)):$K64)
check "2. a slow answer (1.3 s, under timeout=2): byte-exact, not given up on ($r)" result_is "$r" "ok"
check "2. a slow answer: asked once" log_true 'len(G("c22.bin")) == 1'

# ---- 3. a body cut short: resumed --------------------------------------------
reset
fault "path=/c4.bin&method=GET&mode=cut:20000&skip=7&count=1"
check "3. cut:20000: the file reads byte-exact" readall "$MA" c4.bin
# the cut answer declared [a, b] and sent 20000 bytes; another GET asks for
# [a + 20000, b] with the same If-Match (faultd logs an answer when it is
# done: the cut one may come after its resume)
check "3. cut:20000: resumed at the first missing byte with the same If-Match" \
	log_true '[any(f["asked"] == [c["asked"][0] + 20000, c["asked"][1]] and f["status"] == 206 and f["if_match"] == c["if_match"] for f in G("c4.bin")) and c["if_match"] is not None and c["bytes"] == 20000 for c in G("c4.bin") if c["fault"]] == [True]'
check "3. cut:20000: the cut range was not asked again from its start" \
	log_true '[len([f for f in G("c4.bin") if f["range"] == c["range"]]) for c in G("c4.bin") if c["fault"]] == [1]'
reset
fault "path=/c16.bin&method=GET&mode=cut:0&count=1"
r=$(rd "$MA" c16.bin "$SRC/c16.bin" p:$((4 * K64)):$K64)
check "3. cut:0 (headers, no body): retried, the pread is byte-exact ($r)" result_is "$r" "ok"

# ---- 4. 200 with the whole body for a range ---------------------------------------
reset
fault "path=/c5.bin&method=GET&mode=ignore_range&count=2"
r=$(rd "$MA" c5.bin "$SRC/c5.bin" p:$((3 * K64)):$K64 p:$((15 * K64)):$K64 p:$((7 * K64)):100)
check "4. ignore_range: the preads are byte-exact ($r)" result_is "$r" "ok; ok; ok"
check "4. ignore_range: the log has the two 200s of the whole file" \
	log_true '[(e["status"], e["fault"]) for e in G("c5.bin")] == [(200, "ignore_range"), (200, "ignore_range"), (206, None)]'
check "4. ignore_range: the daemon warns that the server ignores Range" \
	grep -q 'ignores Range' "$(daemon_log "$MA")"

reset
fault "path=/c19.bin&method=GET&mode=cut:30000&count=1"
fault "path=/c19.bin&method=GET&mode=ignore_range&count=1"
r=$(rd "$MA" c19.bin "$SRC/c19.bin" p:$((6 * K64)):$K64)
check "4. a cut body resumed with a 200 of the whole file: byte-exact ($r)" result_is "$r" "ok"
check "4. cut, then 200: the log has the cut 206 and the resume answered 200" \
	log_true 'sorted((e["status"], e["fault"], e["range"]) for e in G("c19.bin")) == [(200, "ignore_range", "bytes=423216-458751"), (206, "cut:30000", "bytes=393216-458751")]'

# ---- 5. a 206 of another range: EIO -------------------------------------------------
reset
fault "path=/c6.bin&method=GET&mode=wrong_range&count=inf"
r=$(rd "$MA" c6.bin "$SRC/c6.bin" p:$K64:$K64 p:$((15 * K64)):$K64)
check "5. wrong_range: EIO, never the bytes ($r)" result_is "$r" "errno 5; errno 5"
check "5. wrong_range: the daemon logged the bad Content-Range" \
	grep -qE "c6.bin.*206 for bytes" "$(daemon_log "$MA")"
check "5. wrong_range: not retried (a wrong answer is not transient)" \
	log_true 'len(set(e["range"] for e in G("c6.bin"))) == len(G("c6.bin"))'
reset
check "5. wrong_range: the mount serves another file" readall "$MA" c7.bin
r=$(rd "$MA" c6.bin "$SRC/c6.bin" p:$K64:$K64)
check "5. wrong_range: once the server behaves, the same range reads ($r)" result_is "$r" "ok"

# ---- 6. the file replaced between two reads of one open file ------------------------
reset
r=$(rd "$MA" c8.bin "$ORIG/c8.bin" p:0:$K64 "u:$U/_replace?path=/c8.bin" p:$((8 * K64)):$K64 p:$((9 * K64)):$K64)
check "6. /_replace between preads: old bytes, then EIO, never new bytes ($r)" \
	result_is "$r" "ok; u; errno 5; errno 5"
check "6. /_replace: the GETs after it carried the old If-Match and got 412" \
	log_true 'G("c8.bin")[0]["status"] == 206 and len(G("c8.bin")) >= 3 and all(e["status"] == 412 and e["if_match"] == G("c8.bin")[0]["if_match"] for e in G("c8.bin")[1:])'
check "6. /_replace: the daemon logged the change" \
	grep -qE "c8.bin.*412" "$(daemon_log "$MA")"
check "6. /_replace: the source really changed" bash -c "! cmp -s '$SRC/c8.bin' '$ORIG/c8.bin'"
check "6. /_replace: a new open reads the new content byte-exact (page cache of the old one not served)" \
	readall "$MA" c8.bin
reset
fault "path=/c9.bin&mode=replace_after:1"
r=$(rd "$MA" c9.bin "$ORIG/c9.bin" p:$((2 * K64)):$K64 p:$((10 * K64)):$K64)
check "6. replace_after:1: old bytes, then EIO ($r)" result_is "$r" "ok; errno 5"
r=$(rd "$MA" c9.bin "$SRC/c9.bin" p:$((2 * K64)):$K64)
check "6. replace_after:1: a new open gets the new bytes of the range read before the change ($r)" result_is "$r" "ok"
check "6. replace_after:1: a new open reads the new content byte-exact" readall "$MA" c9.bin

reset
fault "path=/c20.bin&method=GET&mode=cut:30000&count=1"
fault "path=/c20.bin&mode=replace_after:1"
r=$(rd "$MA" c20.bin "$ORIG/c20.bin" p:$((3 * K64)):$K64)
check "6. replaced between a cut and its resume: EIO, never a mix ($r)" result_is "$r" "errno 5"
check "6. cut then replaced: the resume carried the old If-Match and got 412" \
	log_true 'len(set(e["if_match"] for e in G("c20.bin"))) == 1 and [(e["status"], e["range"]) for e in G("c20.bin") if e["status"] != 412] == [(206, "bytes=196608-262143")] and (412, "bytes=226608-262143") in [(e["status"], e["range"]) for e in G("c20.bin")]'
check "6. cut then replaced: a new open reads the new content byte-exact" readall "$MA" c20.bin

# ---- 7. 500 for ever; 404; 403 ----------------------------------------------------
reset
fault "path=/c10.bin&method=GET&mode=status:500&count=inf"
r=$(rd "$MA" c10.bin "$SRC/c10.bin" p:$((4 * K64)):$K64)
check "7. 500 for ever: EIO in less than 10 s ($r)" result_is "$r" "errno 5" 10
check "7. 500 for ever: each range tried 1 + retries = $((RETRIES + 1)) times ($(log_py 'sorted(set((e["range"], [f["range"] for f in G("c10.bin")].count(e["range"])) for e in G("c10.bin")))'))" \
	log_true "len(G('c10.bin')) > 0 and all([f['range'] for f in G('c10.bin')].count(e['range']) == $((RETRIES + 1)) for e in G('c10.bin'))"
check "7. 500 for ever: the daemon logged the failure with the server's error code" \
	grep -qE "c10.bin.*InternalError" "$(daemon_log "$MA")"
reset
check "7. 500 for ever: the mount serves another file" readall "$MA" c11.bin
reset
fault "path=/c21.bin&method=HEAD&mode=status:500&count=inf"
r=$(rd "$MA" c21.bin "$SRC/c21.bin" p:0:$K64)
check "7. 500 for ever to the HEAD of open: EIO at open in less than 10 s ($r)" result_is "$r" "open errno 5" 10
check "7. 500 for ever to HEAD: 1 + retries HEADs" \
	log_true "[e['status'] for e in L] == [500] * $((RETRIES + 1))"
reset
fault "path=/c12.bin&mode=status:404&count=inf"
r=$(rd "$MA" c12.bin "$SRC/c12.bin" p:0:$K64)
check "7. 404 on a listed file: ENOENT at open ($r)" result_is "$r" "open errno 2"
check "7. 404: not retried" log_true 'len(L) == 1 and L[0]["status"] == 404'
reset
fault "path=/c13.bin&mode=status:403&count=inf"
r=$(rd "$MA" c13.bin "$SRC/c13.bin" p:0:$K64)
check "7. 403: EACCES at open ($r)" result_is "$r" "open errno 13"
check "7. 403: not retried" log_true 'len(L) == 1 and L[0]["status"] == 403'
reset
fault "path=/c14.bin&method=GET&mode=status:404&count=inf"
r=$(rd "$MA" c14.bin "$SRC/c14.bin" p:0:$K64)
check "7. 404 to the GET of an opened file: ENOENT at read ($r)" result_is "$r" "errno 2"
reset
fault "path=/c15.bin&method=GET&mode=status:403&count=inf"
r=$(rd "$MA" c15.bin "$SRC/c15.bin" p:0:$K64)
check "7. 403 to the GET of an opened file: EACCES at read ($r)" result_is "$r" "errno 13"
reset
echo "  (cases 1-7: $(secs_since "$T_START") s)"

# ---- 9. the transport counters ---------------------------------------------------
stats_json "$MA" >"$WORK/stats9.json"
tr=$(stats_eval "$WORK/stats9.json" tr 2>&1)
stats_check "9. stats: transport retries > 0 ($tr)" "$WORK/stats9.json" 'tr["retries"] > 0'
stats_check "9. stats: transport resumed > 0" "$WORK/stats9.json" 'tr["resumed"] > 0'
stats_check "9. stats: transport whole_bodies > 0" "$WORK/stats9.json" 'tr["whole_bodies"] > 0'
stats_check "9. stats: transport errors > 0, nothing active" \
	"$WORK/stats9.json" 'tr["errors"] > 0 and tr["active"] == 0'
# issue 16: a warning that costs an order of magnitude shows where the user looks
stats_check "9. stats: warnings has the server ignoring Range" \
	"$WORK/stats9.json" 'sum("ignores Range" in w for w in s["warnings"]) == 1'
COLUMNS=80 "$TOP/prefetchfs-stat" -n 1 "$MA" >"$WORK/stat.txt" 2>&1
check "9. prefetchfs-stat: a line 'warning: the server ignores Range'" \
	grep -q '^warning: the server ignores Range' "$WORK/stat.txt"
check "9. prefetchfs-stat: the warning fits 80 columns (wrapped: mount_stat.sh)" \
	[ "$(awk 'length($0) > 80' "$WORK/stat.txt" | wc -l)" -eq 0 ]
pf_umount "$MA" || fail "unmount of $MA"

# ---- 8. a server that stops answering ---------------------------------------------
T_START=$(now_s)
HANG_OPTS=$BASE_OPTS,retries=1,timeout=2
reset
pf_mount_ready "$U/" "$MB" -o "$HANG_OPTS" ||
	{ fail "mount of $U/ on $MB"; finish; }
# wait_hang NAME: until faultd holds a hanging GET of /NAME (at most 10 s)
wait_hang() {
	local i
	for ((i = 0; i < 100; i++)); do
		log_true "any(e['fault'] and e['fault'].startswith('hang') for e in G('$1'))" >/dev/null && return 0
		sleep 0.1
	done
	log_true "any(e['fault'] and e['fault'].startswith('hang') for e in G('$1'))"
}
# hung_read MNT NAME WHAT: mounts $U/ on MNT (timeout=15 s, retries=1),
# makes the GETs of /NAME hang, starts a reader of its first 64 KiB in the
# background ($reader, output in $WORK/NAME.out) and waits until faultd
# holds its GET (check "8. WHAT: ...")
hung_read() {
	local mnt=$1 name=$2 what=$3
	reset
	pf_mount_ready "$U/" "$mnt" -o "$BASE_OPTS,retries=1,timeout=15" ||
		{ fail "mount of $U/ on $mnt"; finish; }
	fault "path=/$name&method=GET&mode=hang&count=inf"
	python3 "$WORK/rd.py" "$mnt/$name" "$SRC/$name" p:0:$K64 >"$WORK/$name.out" 2>&1 &
	reader=$!
	check "8. $what: the read reached the server and hangs there" wait_hang "$name"
}
# daemon_exits PID MNT T0 WHAT EVENT: the daemon PID of MNT exits within
# 5 s of EVENT (at T0); if not, it waits for the hung request: its log is
# printed and it is killed
daemon_exits() {
	local pid=$1 mnt=$2 t0=$3 what=$4 event=$5
	if wait_gone "$pid" 50; then
		ok "8. $what: the daemon exits within 5 s of $event ($(secs_since "$t0") s)"
		return
	fi
	fail "8. $what: the daemon is still there 5 s after $event: it waits for the hung request (killing it)"
	sed 's/^/  daemon: /' "$(daemon_log "$mnt")"
	kill -9 "$pid" 2>/dev/null
	wait_gone "$pid" 50
}
# A read hangs at the server; fusermount3 -u meanwhile returns at once
# (EBUSY: the reader holds the file open), the reader gets EIO in bounded
# time: each READ is 2 tries of 2-3 s, and the kernel asks once more for
# one page.
fault "path=/h1.bin&method=GET&mode=hang&count=inf"
T0=$(now_s)
guard "$MB" 40 python3 "$WORK/rd.py" "$MB/h1.bin" "$SRC/h1.bin" p:$((3 * K64)):$K64 >"$WORK/h1.out" 2>&1 &
reader=$!
check "8. hang: the read reached the server and hangs there" wait_hang h1.bin
t0=$(now_s)
timeout -s KILL 10 fusermount3 -u "$MB" >"$WORK/umount.out" 2>&1
rc=$?
t=$(secs_since "$t0")
check "8. hang: fusermount3 -u during the hung read returns within 2 s (exit $rc after $t s: $(tr '\n' ' ' <"$WORK/umount.out"))" \
	python3 -c "import sys; sys.exit(not ($rc != 137 and $t < 2))"
wait "$reader"
r=$(sed ':a;N;$!ba;s/\n/; /g' "$WORK/h1.out")
check "8. hang: the reader gets EIO in bounded time (< 20 s) ($r, $(secs_since "$T0") s)" result_is "$r" "errno 5" 20
if mountpoint -q "$MB"; then
	ok "8. hang: still mounted (the unmount was refused while the file was open)"
else
	pf_mount_ready "$U/" "$MB" -o "$HANG_OPTS" ||
		{ fail "mount of $U/ on $MB again"; finish; }
fi
check "8. hang: the daemon logged the timeout" \
	grep -qiE "h1.bin.*tim" "$(daemon_log "$MB")"
check "8. hang: each request tried twice (retries=1)" \
	log_true "len(G('h1.bin')) > 0 and all([f['range'] for f in G('h1.bin')].count(e['range']) == 2 and e['fault'] == 'hang' for e in G('h1.bin'))"
reset
check "8. hang: the mount serves another file afterwards" readall "$MB" h2.bin

# the headers come, then nothing
reset
fault "path=/h3.bin&method=GET&mode=hang_body:0&count=inf"
r=$(rd "$MB" h3.bin "$SRC/h3.bin" p:$((5 * K64)):$K64)
check "8. headers, then no body byte: EIO in bounded time (< 20 s) ($r)" result_is "$r" "errno 5" 20
check "8. headers, then no body byte: each request tried twice" \
	log_true "len(G('h3.bin')) > 0 and all([f['range'] for f in G('h3.bin')].count(e['range']) == 2 for e in G('h3.bin'))"
reset
check "8. the mount serves another file afterwards" readall "$MB" h4.bin
pid=$(pf_pid "$MB")
t0=$(now_s)
pf_umount "$MB"
check "8. unmount, the daemon exits ($(secs_since "$t0") s)" exited "$pid"
check "8. the daemon logged its unmount" grep -q 'unmounting' "$(daemon_log "$MB")"

# The reader of a hung read is killed, the mount unmounted: the daemon
# must exit within seconds, not wait out the hung request's timeouts and
# retries (timeout=15 s, retries=1 here: 30 s).
MC=$WORK/mnt-unmount
hung_read "$MC" h5.bin "kill + unmount"
kill -9 "$reader"
wait_gone "$reader" 30 2>/dev/null
check "8. kill + unmount: the killed reader is gone within 3 s" exited "$reader"
wait "$reader" 2>/dev/null
pid=$(pf_pid "$MC")
t0=$(now_s)
timeout -s KILL 10 fusermount3 -u "$MC" >"$WORK/umount.out" 2>&1
rc=$?
check "8. kill + unmount: fusermount3 -u succeeds at once (exit $rc after $(secs_since "$t0") s: $(tr '\n' ' ' <"$WORK/umount.out"))" [ $rc -eq 0 ]
daemon_exits "$pid" "$MC" "$t0" "kill + unmount" "the unmount"

# The same with SIGTERM to the daemon (as systemd stops it) while the read
# hangs: the mount goes, the reader gets an error at once, and the daemon
# exits within seconds.
MD=$WORK/mnt-sigterm
hung_read "$MD" h6.bin SIGTERM
pid=$(pf_pid "$MD")
t0=$(now_s)
kill -TERM "$pid"
wait_gone "$reader" 100
check "8. SIGTERM: the reader gets an error, no bytes, within 10 s ($(secs_since "$t0") s: $(tr '\n' ' ' <"$WORK/h6.bin.out"))" \
	eval "exited $reader && grep -qE '^errno [0-9]+ ' '$WORK/h6.bin.out'"
kill -9 "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
daemon_exits "$pid" "$MD" "$t0" SIGTERM SIGTERM
check "8. SIGTERM: the mount is gone" bash -c "! mountpoint -q '$MD'"
echo "  (case 8: $(secs_since "$T_START") s)"

check "faultd printed no traceback" bash -c "! grep -q Traceback '$FAULTD_DIR/log'"
finish
