#!/bin/bash
# The S3 backend against s3rver (tests/servers.sh: it checks SigV4):
#  - a prefix with 2,500 keys in one "directory" lists completely across
#    ListObjectsV2 pages, names and sizes equal; nested prefixes are
#    directories; odd key names; an empty object;
#  - byte-exact reads of 64 MiB objects: random preads, mmap, sequential,
#    8 readers at once, threads on one fd;
#  - credentials: from the environment; a wrong secret fails the mount
#    with one line naming the denial; from ~/.aws/credentials through
#    AWS_PROFILE and through -o profile; a session token (from the
#    environment and from the profile) is sent and signed; a missing
#    profile and a missing bucket fail the mount with one line;
#  - an object replaced (same size, other bytes) while a file is open: a
#    read of bytes not fetched yet gets EIO, never bytes of the new
#    version; a new open reads the new version byte-exact.
# The happy-path daemons run in the foreground (-f) so that their log can
# be checked for error lines.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
. "$(dirname "$0")/objlib.sh"
need_fuse
need_tools "$HELPERS/randread" "$HELPERS/mmapread" "$HELPERS/threadread" "$MKDATA"

# nothing of the caller's AWS set-up may leak in
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE \
	AWS_DEFAULT_PROFILE AWS_REGION AWS_DEFAULT_REGION AWS_ENDPOINT_URL \
	AWS_ENDPOINT_URL_S3 AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE
export HOME=$WORK/home-none
mkdir -p "$HOME"

MiB=1048576
SRC=$WORK/src
mkdir -p "$SRC/many" "$SRC/nested/a/b/c" "$SRC/odd"
"$MKDATA" --seed 11 "$WORK/gen" 2 65M >/dev/null 2>&1 || fail "bench/mkdata"
mv "$WORK/gen/file-000000.bin" "$SRC/big.bin"
truncate -s $((64 * MiB + 12345)) "$SRC/big.bin"	# a partial last block
mv "$WORK/gen/file-000001.bin" "$SRC/big2.bin"
truncate -s $((64 * MiB)) "$SRC/big2.bin"
# 2,500 keys under one prefix, 0 to 199 bytes each: three pages of 1,000
python3 - "$SRC/many" <<'PY'
import os, random, sys
random.seed(9)
for i in range(2500):
    with open(os.path.join(sys.argv[1], "item-%05d.dat" % i), "wb") as f:
        f.write(random.randbytes(i % 200))
PY
printf 'leaf\n' >"$SRC/nested/a/b/c/leaf.txt"
printf 'mid\n' >"$SRC/nested/a/b/mid.txt"
mkfile "$SRC/nested/a/x.bin" 1000000
printf 'top\n' >"$SRC/nested/top.txt"
# (no '&', '<', '>', quotes: s3rver escapes them twice in its listings,
# "a&b" comes as "a&amp;amp;b", which S3 does not do)
odd=("name with  spaces.txt" "ünïcödé-日本語.txt" "a+b=c.txt" "100%.txt" "50%25.txt"
	"x#y.txt" "semi;colon,comma.txt" "paren (1) [2].txt" "tilde~star*.txt" "q?.txt")
for n in "${odd[@]}"; do
	printf '%s\n' "content of $n" >"$SRC/odd/$n"
done
: >"$SRC/empty"
tree_of "$SRC" >"$WORK/tree.src"

# (S3_LOG: the server logs each request, to count the listing's pages)
S3_LOG=1 s3_start bkt other >/dev/null || { fail "s3 server"; finish; }
s3_put_tree bkt ds/ "$SRC" || { fail "s3_put_tree"; finish; }
ok "s3rver at $S3_ENDPOINT, the tree stored under s3://bkt/ds/"
EP=(-o endpoint="$S3_ENDPOINT")

# creds CMD...: CMD with the server's keys in the environment
creds() { AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET "$@"; }

# small_reads TAG MNT: every odd file, the nested ones and 300 of the
# 2,500 small ones byte-exact (one python)
small_reads() {
	rc_check "[$1] odd, nested and 300 of the 2,500 small files byte-exact" \
		python3 - "$SRC" "$2" <<'PY'
import os, random, sys
src, mnt = sys.argv[1], sys.argv[2]
names = ["empty", "nested/a/b/c/leaf.txt", "nested/a/b/mid.txt", "nested/a/x.bin",
         "nested/top.txt"] + ["odd/" + n for n in os.listdir(os.path.join(src, "odd"))]
random.seed(3)
names += random.sample(["many/" + n for n in os.listdir(os.path.join(src, "many"))], 300)
bad = 0
for n in names:
    want = open(os.path.join(src, n), "rb").read()
    got = open(os.path.join(mnt, n), "rb").read()
    if got != want:
        print("differs:", n, len(got), len(want))
        bad += 1
print("files=%d mismatches=%d" % (len(names), bad))
sys.exit(1 if bad else 0)
PY
}

# ---- keys from the environment ---------------------------------------------
M=$WORK/mnt-env
creds pf_mount_ready s3://bkt/ds/ "$M" "${EP[@]}" || { fail "mount s3://bkt/ds/"; finish; }
ok "mounted s3://bkt/ds/ (keys from the environment)"
g tree_of "$M" >"$WORK/tree.env"
if diff "$WORK/tree.src" "$WORK/tree.env" >"$WORK/tree.env.diff"; then
	ok "[env] listing (names, types, sizes) equals the source tree ($(wc -l <"$WORK/tree.src") entries)"
else
	fail "[env] listing differs from the source tree (< source, > mount):"
	head -30 "$WORK/tree.env.diff"
fi
g ls -A "$M/many" >"$WORK/many.ls"
check "[env] many/ lists 2500 entries across pages ($(wc -l <"$WORK/many.ls"))" \
	test "$(wc -l <"$WORK/many.ls")" -eq 2500
# (s3rver logs the query without its first character)
check "[env] many/ was listed in pages: at least 2 requests with a continuation-token ($(grep -ac 'ontinuation-token=.*prefix=ds%2Fmany%2F' "$S3_DIR/log"))" \
	test "$(grep -ac 'ontinuation-token=.*prefix=ds%2Fmany%2F' "$S3_DIR/log")" -ge 2
check "[env] many/: the names equal the keys" \
	bash -c 'diff <(ls -A "$1" | LC_ALL=C sort) <(LC_ALL=C sort "$2") >/dev/null' _ "$SRC/many" "$WORK/many.ls"
check "[env] nested prefixes are directories" \
	bash -c '[ -d "$1/nested" ] && [ -d "$1/nested/a/b/c" ] && [ "$(ls "$1/nested/a")" = "$(printf "b\nx.bin")" ]' _ "$M"
small_reads env "$M"

# the 64 MiB objects: random and mmap first, while nothing is cached
rc_check "[env] 1000 random preads of 1 B..1 MiB of big.bin byte-exact" \
	"$HELPERS/randread" -s 41 -n 1000 -m $MiB "$M/big.bin" "$SRC/big.bin"
rc_check "[env] mmap of big.bin: sequential and 1000 random page touches" \
	"$HELPERS/mmapread" -s 42 -n 1000 "$M/big.bin" "$SRC/big.bin"
drop "$M/big.bin"
rc_check "[env] sequential cat of big.bin byte-exact (cmp)" cmp "$SRC/big.bin" "$M/big.bin"
# 8 readers at once, one eighth of big2.bin each
eighths() {
	local i
	for i in 0 1 2 3 4 5 6 7; do
		( a=$(dd if="$M/big2.bin" bs=1M skip=$((i * 8)) count=8 status=none | sha256sum)
		  b=$(dd if="$SRC/big2.bin" bs=1M skip=$((i * 8)) count=8 status=none | sha256sum)
		  [ "$a" = "$b" ]
		  echo "rc=$?" >"$WORK/conc.$i" ) &
	done
	wait
}
rm -f "$WORK"/conc.*
g eighths || fail "[env] 8 concurrent readers: HANG"
bad=0
for i in 0 1 2 3 4 5 6 7; do
	grep -qx 'rc=0' "$WORK/conc.$i" 2>/dev/null || bad=$((bad + 1))
done
check "[env] 8 concurrent readers of the eighths of big2.bin, all byte-exact ($bad bad)" test $bad -eq 0
drop "$M/big2.bin"
rc_check "[env] 8 threads, one fd, interleaved unaligned 1000003-byte preads of big2.bin" \
	"$HELPERS/threadread" -t 8 -c 1000003 -m seq "$M/big2.bin" "$SRC/big2.bin"
errno_checks env <<'EOF'
ENOENT a missing key	os.stat(m + "/no-such-key")
ENOENT a missing key under a prefix	os.stat(m + "/many/item-99999.dat")
ENOENT a missing prefix	os.stat(m + "/nested/zz/leaf.txt")
ENOENT a key's prefix as a file name	os.stat(m + "/nested/a/b/c/leaf")
EROFS create a file	open(m + "/new.txt", "w")
EROFS open for writing	os.open(m + "/big.bin", os.O_WRONLY)
EROFS unlink	os.unlink(m + "/empty")
EROFS mkdir	os.mkdir(m + "/nested/new")
EOF
# the transport's counters: every ranged GET above counted with its bytes
# (big.bin and big2.bin were each read whole at least once) and times;
# connections kept alive (far fewer opened than requests made)
stats_json "$M" >"$WORK/stats.env.json"
stats_check "[env] stats: range_gets > 0, range_bytes >= both 64 MiB objects" \
	"$WORK/stats.env.json" \
	'tr["range_gets"] > 0 and tr["range_bytes"] >= 2 * 64 * 1048576 and tr["range_gets"] <= tr["requests"]'
stats_check "[env] stats: range_ms >= range_ttfb_ms > 0" "$WORK/stats.env.json" \
	'tr["range_ms"] >= tr["range_ttfb_ms"] > 0'
stats_check "[env] stats: connections reused (1 <= connects < requests / 2)" \
	"$WORK/stats.env.json" '1 <= tr["connects"] < tr["requests"] / 2'
pf_umount "$M"
clean_log "$M"

# ---- bad credentials, a missing bucket -----------------------------------------
AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=not-the-secret \
	bad_mount "a wrong secret" 'denied|403|forbidden|signature' 15 s3://bkt/ds/ "${EP[@]}" -o retries=1
check "a wrong secret: the message does not show the secret" \
	bash -c '! grep -q not-the-secret "$1"' _ "$WORK/bad.err"
AWS_ACCESS_KEY_ID=NOSUCHKEY AWS_SECRET_ACCESS_KEY=$S3_SECRET \
	bad_mount "an unknown access key" 'denied|403|forbidden|access key' 15 s3://bkt/ds/ "${EP[@]}" -o retries=1
creds bad_mount "a missing bucket" 'bucket|404|no such' 15 s3://no-such-bucket/ds/ "${EP[@]}" -o retries=1
# a prefix without keys is an empty directory to S3: the mount may fail
# with one line, or show an empty directory
M=$WORK/mnt-noprefix
mkdir -p "$M"
creds timeout 20 "$PF" "${EP[@]}" -o retries=1 s3://bkt/no-such-prefix/ "$M" >"$WORK/np.out" 2>"$WORK/np.err"
rc=$?
if [ $rc -eq 0 ]; then
	MOUNTS+=("$M")
	check "a prefix without keys: mounts as an empty directory" test -z "$(g ls -A "$M")"
	pf_umount "$M"
else
	check "a prefix without keys: fails with one line (exit $rc): $(cat "$WORK/np.err")" \
		one_line_err "$WORK/np.err"
fi

# ---- ~/.aws/credentials ------------------------------------------------------
H=$WORK/home
mkdir -p "$H/.aws"
cat >"$H/.aws/credentials" <<EOF
[default]
aws_access_key_id = NOSUCHKEY
aws_secret_access_key = wrong

[pftest]
aws_access_key_id = $S3_KEY
aws_secret_access_key = $S3_SECRET

[pftoken]
aws_access_key_id=$S3_KEY
aws_secret_access_key=$S3_SECRET
aws_session_token=FwoGZXIvYXdzEFAaDO+token/with=special+chars
EOF
# profile_mount TAG [options...] with the environment set by the caller
profile_mount() {
	local tag=$1
	shift
	M=$WORK/mnt-$tag
	if pf_mount_ready s3://bkt/ds/ "$M" "${EP[@]}" "$@"; then
		ok "[$tag] mounted"
		g tree_of "$M" >"$WORK/tree.$tag"
		check "[$tag] listing equals the source tree" cmp -s "$WORK/tree.src" "$WORK/tree.$tag"
		rc_check "[$tag] nested/a/x.bin byte-exact" cmp "$SRC/nested/a/x.bin" "$M/nested/a/x.bin"
		rc_check "[$tag] 200 random preads of big2.bin byte-exact" \
			"$HELPERS/randread" -s 43 -n 200 -m $MiB "$M/big2.bin" "$SRC/big2.bin"
		pf_umount "$M"
		clean_log "$M"
	else
		fail "[$tag] mount"
	fi
}
HOME=$H AWS_PROFILE=pftest profile_mount profile-env
HOME=$H profile_mount profile-opt -o profile=pftest
HOME=$H AWS_PROFILE=pftoken profile_mount profile-token
AWS_SESSION_TOKEN="FwoGZXIvYXdzEFAaDO+token/with=special+chars" creds profile_mount env-token
HOME=$H bad_mount "a missing profile" 'profile|nosuch' 15 s3://bkt/ds/ "${EP[@]}" -o profile=nosuch,retries=1
HOME=$H bad_mount "the default profile with a wrong key" 'denied|403|forbidden|access key' 15 \
	s3://bkt/ds/ "${EP[@]}" -o retries=1

# The session token is sent and signed: a server that records the first
# request and answers 403 (so the mount fails: expected)
python3 -c '
import http.server, json, os, sys
out = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def handle_one(self):
        if not os.path.exists(out):
            with open(out + ".tmp", "w") as f:
                json.dump({k.lower(): v for k, v in self.headers.items()}, f)
            os.rename(out + ".tmp", out)
        body = b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>"
        self.send_response(403)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    do_GET = do_HEAD = handle_one
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(out + ".port.tmp", "w").write(str(s.server_address[1]))
os.rename(out + ".port.tmp", out + ".port")
s.serve_forever()
' "$WORK/capture" </dev/null >"$WORK/capture.log" 2>&1 &
CAP_PID=$!
for i in $(seq 100); do [ -s "$WORK/capture.port" ] && break; sleep 0.05; done
AWS_SESSION_TOKEN="FwoGZXIvYXdzEFAaDO+token/with=special+chars" creds timeout 20 \
	"$PF" -o endpoint="http://127.0.0.1:$(cat "$WORK/capture.port")",retries=0 \
	s3://bkt/ds/ "$WORK/mnt-bad" >/dev/null 2>&1
check "session token: sent as X-Amz-Security-Token and signed" python3 -c '
import json, sys
h = json.load(open(sys.argv[1]))
auth = h.get("authorization", "")
signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";") if "SignedHeaders=" in auth else []
ok = (h.get("x-amz-security-token") == "FwoGZXIvYXdzEFAaDO+token/with=special+chars"
      and "x-amz-security-token" in signed and auth.startswith("AWS4-HMAC-SHA256 "))
if not ok:
    print("headers:", h)
sys.exit(0 if ok else 1)' "$WORK/capture"
kill "$CAP_PID" 2>/dev/null
wait "$CAP_PID" 2>/dev/null

# ---- an object replaced while it is open ---------------------------------------
# 48 MiB object; prefetch=off so that only what is read is fetched: read
# the first MiB, replace the object (same size, other bytes), read at 40 MiB
mkfile "$WORK/rep.v1" $((48 * MiB))
mkfile "$WORK/rep.v2" $((48 * MiB))
cmp -s "$WORK/rep.v1" "$WORK/rep.v2" && fail "the two versions differ"
s3_replace bkt ds2/rep.bin "$WORK/rep.v1" || fail "s3_replace (first version)"
export S3_DIR S3_ENDPOINT S3_REGION S3_KEY S3_SECRET
export -f s3_replace s3_curl s3_url
M=$WORK/mnt-replace
creds pf_mount_ready s3://bkt/ds2/ "$M" "${EP[@]}" -o prefetch=off || fail "mount s3://bkt/ds2/ (prefetch=off)"
rc_check "replaced while open: a far read gets EIO, never new bytes" \
	replaced_read "$M/rep.bin" "$WORK/rep.v1" "$WORK/rep.v2" \
	bash -c 's3_replace bkt ds2/rep.bin "$1"' _ "$WORK/rep.v2"
sed 's/^/  /' "$WORK/rc.out"
check "replaced while open: stat still gives the size" test "$(stat -c %s "$M/rep.bin")" -eq $((48 * MiB))
rc_check "replaced: a new open reads the new version byte-exact" cmp "$WORK/rep.v2" "$M/rep.bin"
drop "$M/rep.bin"
rc_check "replaced: random reads of the new version byte-exact" \
	"$HELPERS/randread" -s 44 -n 300 -m $MiB "$M/rep.bin" "$WORK/rep.v2"
pf_umount "$M"
clean_log "$M" "rep\.bin.*(failed|412|[Pp]recondition|changed)"

finish
