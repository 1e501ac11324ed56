#!/bin/bash
# Checks the servers of tests/servers.sh with the curl CLI: what the mount
# tests of the HTTP and S3 backends rely on (listings, ranges, ETags,
# conditional requests, TLS and HTTP/2, SigV4, pagination, replacing an
# object, stopping a server).  Not part of make check: run it by hand,
#   bash tests/servers_selftest.sh
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"

# t0: now in ms, for the timings printed
ms() { date +%s%3N; }

# hdr FILE NAME: value of header NAME in a curl -D dump (last response)
hdr() { tr -d '\r' <"$1" | awk -v n="$(echo "$2" | tr A-Z a-z)" 'BEGIN { FS = ": " } tolower($1) == n { v = substr($0, length($1) + 3) } END { print v }'; }
status() { tr -d '\r' <"$1" | awk '/^HTTP\// { s = $2 } END { print s }'; }

SRC=$WORK/src
mkdir -p "$SRC/sub/deeper" "$SRC/empty"
mkfile "$SRC/a.bin" 100000
mkfile "$SRC/sub/b.bin" 4097
printf 'x' >"$SRC/sub/deeper/one"
: >"$SRC/zero"

# ---- nginx, HTML listing --------------------------------------------------
t=$(ms)
nginx_start "$SRC" >/dev/null || { fail "nginx_start"; finish; }
ok "nginx_start: $NGINX_URL in $(($(ms) - t)) ms"
U=$NGINX_URL
curl -s "$U" | tr -d '\r' >"$WORK/l.html"
check "html listing names a.bin with its exact size" grep -qE '<a href="a.bin">a.bin</a> +[0-9A-Za-z:-]+ [0-9:]+ +100000$' "$WORK/l.html"
check "html listing names sub/ as a directory" grep -q '<a href="sub/">sub/</a>' "$WORK/l.html"
curl -s "${U}sub/" | tr -d '\r' >"$WORK/l2.html"
check "html listing of sub/" grep -qE 'b.bin</a> .* 4097$' "$WORK/l2.html"
curl -s -D "$WORK/h" -o "$WORK/r" -r 10-19 "${U}a.bin"
check "nginx ranged GET: 206" test "$(status "$WORK/h")" = 206
check "nginx ranged GET: Content-Range bytes 10-19/100000" test "$(hdr "$WORK/h" Content-Range)" = "bytes 10-19/100000"
check "nginx ranged GET: the 10 bytes" cmp "$WORK/r" <(tail -c +11 "$SRC/a.bin" | head -c 10)
ETAG=$(hdr "$WORK/h" ETag)
check "nginx sends an ETag ($ETAG)" test -n "$ETAG"
check "nginx sends Last-Modified" test -n "$(hdr "$WORK/h" Last-Modified)"
curl -s -D "$WORK/h" -o /dev/null -r 0-9 -H 'If-Match: "nope"' "${U}a.bin"
check "nginx If-Match mismatch: 412" test "$(status "$WORK/h")" = 412
curl -s -D "$WORK/h" -o /dev/null -r 0-9 -H "If-Match: $ETAG" "${U}a.bin"
check "nginx If-Match match: 206" test "$(status "$WORK/h")" = 206
curl -s -D "$WORK/h" -o /dev/null -r 200000-200009 "${U}a.bin"
check "nginx range past the end: 416" test "$(status "$WORK/h")" = 416
curl -s -D "$WORK/h" -o /dev/null "${U}nothere"
check "nginx missing file: 404" test "$(status "$WORK/h")" = 404
check "nginx whole file byte-exact" cmp <(curl -s "${U}a.bin") "$SRC/a.bin"
# 300 requests on one connection (curl reuses it across URLs)
urls=()
for i in $(seq 300); do urls+=(-o /dev/null "${U}sub/b.bin"); done
n=$(curl -s -w '%{num_connects}\n' "${urls[@]}" | paste -sd+ | bc)
check "nginx keep-alive: 300 requests over $n connection(s)" test "$n" -eq 1

# ---- nginx, JSON listing, TLS, HTTP/2 --------------------------------------
t=$(ms)
nginx_start "$SRC" --json --tls >/dev/null || { fail "nginx_start --json --tls"; finish; }
ok "nginx_start --json --tls: $NGINX_URL in $(($(ms) - t)) ms"
T=$NGINX_URL
check "https URL" test "${T:0:8}" = "https://"
curl -s --cacert "$NGINX_CACERT" "$T" >"$WORK/l.json"
check "json listing: a.bin file of 100000 bytes, sub a directory" python3 -c '
import json, sys
l = {e["name"]: e for e in json.load(open(sys.argv[1]))}
assert l["a.bin"]["type"] == "file" and l["a.bin"]["size"] == 100000, l
assert l["sub"]["type"] == "directory", l
assert l["zero"]["size"] == 0, l' "$WORK/l.json"
v=$(curl -s --cacert "$NGINX_CACERT" -o /dev/null -w '%{http_version}' "${T}a.bin")
check "HTTP/2 negotiated over TLS (got $v)" test "$v" = 2
check "https with the CA: byte-exact" cmp <(curl -s --cacert "$NGINX_CACERT" "${T}a.bin") "$SRC/a.bin"
curl -s -o /dev/null "${T}a.bin"
check "https without the CA: certificate rejected (curl exit 60)" test $? -eq 60
check "certificate good for DNS:localhost too" quiet curl -sf --cacert "$NGINX_CACERT" "https://localhost:$NGINX_PORT/a.bin"
curl -s --cacert "$NGINX_CACERT" -D "$WORK/h" -o "$WORK/r" -r 99990-99999 "${T}a.bin"
check "https ranged GET: 206 bytes 99990-99999/100000" test "$(status "$WORK/h") $(hdr "$WORK/h" Content-Range)" = "206 bytes 99990-99999/100000"
curl -s --cacert "$NGINX_CACERT" -D "$WORK/h" -o /dev/null -r 0-1 -H 'If-Match: "x"' "${T}a.bin"
check "https If-Match mismatch: 412" test "$(status "$WORK/h")" = 412
check "http/1.1 over TLS still works" quiet curl -sf --http1.1 --cacert "$NGINX_CACERT" "${T}a.bin"

# ---- stopping nginx -----------------------------------------------------------
P=$NGINX_PID
nginx_stop
check "nginx_stop: the server is gone" exited "$P"
curl -s --cacert "$NGINX_CACERT" -o /dev/null "$T"
check "nginx_stop: connection refused (curl exit 7)" test $? -eq 7

# ---- S3 ---------------------------------------------------------------------
t=$(ms)
s3_start bkt other >/dev/null || { fail "s3_start"; finish; }
ok "s3_start: $S3_ENDPOINT in $(($(ms) - t)) ms"
E=$S3_ENDPOINT

# the data set: p/ with 2,500 small keys, two 64 MiB objects, a sub "dir"
D=$WORK/ds
mkdir -p "$D/many" "$D/big" "$D/sub"
python3 - "$D/many" <<'PY'
import os, random, sys
random.seed(3)
for i in range(2500):
    with open(os.path.join(sys.argv[1], "k%05d" % i), "wb") as f:
        f.write(random.randbytes(random.randrange(0, 4096)))
PY
mkfile "$D/big/b1.bin" $((64 << 20))
mkfile "$D/big/b2.bin" $((64 << 20))
cp "$SRC/a.bin" "$D/sub/a.bin"
printf 'x' >"$D/sub/one"
t=$(ms)
s3_put_tree bkt many/ "$D/many" || fail "s3_put_tree of 2,500 keys"
ok "s3_put_tree: 2,500 keys in $(($(ms) - t)) ms"
t=$(ms)
s3_put_tree bkt big/ "$D/big" || fail "s3_put_tree of 2 x 64 MiB"
ok "s3_put_tree: 2 x 64 MiB in $(($(ms) - t)) ms"
s3_put_tree bkt "" "$D/sub" || fail "s3_put_tree to the bucket's root"
s3_put_tree bkt "odd/" "$SRC" || fail "s3_put_tree of a tree with an empty file"
# neighbours of "many/" that sort around it in byte order
printf a >"$WORK/n"
for k in many-x many.x many0 "many/k00010 with space" "many/k01234+plus"; do
	s3_replace bkt "$k" "$WORK/n" || fail "s3_replace $k"
done

# list_all BUCKET QUERY: every page of a ListObjectsV2, as one JSON object
list_all() {
	python3 - "$S3_ENDPOINT/$1" "$2" "$S3_KEY:$S3_SECRET" <<'PY'
import json, subprocess, sys, urllib.parse, xml.etree.ElementTree as ET
url, query, user = sys.argv[1:]
ns = {"s": "http://doc.s3.amazonaws.com/2006-03-01/"}
keys, prefixes, pages, token = [], [], 0, None
while True:
    # curl 7.88 signs the query as given: it must be in sorted order
    q = "&".join(sorted(query.split("&") + (["continuation-token=" + urllib.parse.quote(token, safe="")] if token else [])))
    out = subprocess.run(["curl", "-sS", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", user,
                          "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", url + "?" + q],
                         capture_output=True, check=True).stdout
    r = ET.fromstring(out)
    pages += 1
    keys += [c.find("s:Key", ns).text for c in r.findall("s:Contents", ns)]
    prefixes += [c.find("s:Prefix", ns).text for c in r.findall("s:CommonPrefixes", ns)]
    if r.find("s:IsTruncated", ns).text != "true":
        break
    token = r.find("s:NextContinuationToken", ns).text
print(json.dumps({"keys": keys, "prefixes": prefixes, "pages": pages}))
PY
}
L=$(list_all bkt "list-type=2&prefix=many%2F&delimiter=%2F")
check "listing of many/: 2,502 keys over 3 pages, byte order, no repeats" python3 -c '
import json, sys
l = json.loads(sys.argv[1])
k = l["keys"]
assert l["pages"] == 3, l["pages"]
assert len(k) == 2502 and len(set(k)) == 2502, len(k)
assert k == sorted(k, key=lambda s: s.encode()), "not in byte order"
assert "many/k00010 with space" in k and "many/k01234+plus" in k
assert all(x.startswith("many/") for x in k)' "$L"
L=$(list_all bkt "list-type=2&delimiter=%2F")
check "root listing with delimiter: keys and common prefixes" python3 -c '
import json, sys
l = json.loads(sys.argv[1])
assert l["keys"] == ["a.bin", "many-x", "many.x", "many0", "one"], l["keys"]
assert l["prefixes"] == ["big/", "many/", "odd/"], l["prefixes"]' "$L"
L=$(list_all bkt "list-type=2&prefix=odd%2F&delimiter=%2F")
check "listing of odd/: files and the sub/ prefix (empty dirs are no keys)" python3 -c '
import json, sys
l = json.loads(sys.argv[1])
assert l["keys"] == ["odd/a.bin", "odd/zero"], l["keys"]
assert l["prefixes"] == ["odd/sub/"], l["prefixes"]' "$L"
s3_curl -o "$WORK/l.xml" "$E/bkt?list-type=2&max-keys=7&prefix=many%2F"
check "max-keys=7: 7 keys and a continuation token" python3 -c '
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://doc.s3.amazonaws.com/2006-03-01/"}
r = ET.parse(sys.argv[1]).getroot()
assert len(r.findall("s:Contents", ns)) == 7
assert r.find("s:IsTruncated", ns).text == "true" and r.find("s:NextContinuationToken", ns).text' "$WORK/l.xml"
check "listing gives ETag, Size, LastModified" grep -q '<Contents><Key>many/k00000</Key><LastModified>[0-9T:.-]*Z</LastModified><ETag>&quot;[0-9a-f]\{32\}&quot;</ETag><Size>[0-9]*</Size>' "$WORK/l.xml"

# objects
s3_curl -D "$WORK/h" -o "$WORK/r" "$E/bkt/big/b1.bin"
check "GET of a 64 MiB object: 200, byte-exact" test "$(status "$WORK/h")" = 200 -a "$(cmp "$WORK/r" "$D/big/b1.bin" && echo same)" = same
check "ETag is the quoted MD5 of the content" test "$(hdr "$WORK/h" ETag)" = "\"$(md5sum <"$D/big/b1.bin" | cut -d' ' -f1)\""
check "Content-Length 67108864" test "$(hdr "$WORK/h" Content-Length)" = 67108864
check "Last-Modified is an HTTP date" python3 -c 'import email.utils, sys; assert email.utils.parsedate_to_datetime(sys.argv[1])' "$(hdr "$WORK/h" Last-Modified)"
check "Accept-Ranges: bytes" test "$(hdr "$WORK/h" Accept-Ranges)" = bytes
B1ETAG=$(hdr "$WORK/h" ETag)
s3_curl -D "$WORK/h" -o "$WORK/r" "$E/bkt/many/k00042"
check "a small seeded object: byte-exact, ETag its MD5, its size" test \
	"$(cmp "$WORK/r" "$D/many/k00042" && echo same) $(hdr "$WORK/h" ETag) $(hdr "$WORK/h" Content-Length)" = \
	"same \"$(md5sum <"$D/many/k00042" | cut -d' ' -f1)\" $(stat -c %s "$D/many/k00042")"
s3_curl -D "$WORK/h" -o "$WORK/r" -r 1048576-2097151 "$E/bkt/big/b1.bin"
check "ranged GET: 206, Content-Range bytes 1048576-2097151/67108864" test "$(status "$WORK/h") $(hdr "$WORK/h" Content-Range)" = "206 bytes 1048576-2097151/67108864"
check "ranged GET: the bytes" cmp "$WORK/r" <(tail -c +1048577 "$D/big/b1.bin" | head -c 1048576)
s3_curl -D "$WORK/h" -o "$WORK/r" -r 0-0 "$E/bkt/big/b1.bin"
check "bytes=0-0: 206 and one byte" test "$(status "$WORK/h") $(hdr "$WORK/h" Content-Range) $(stat -c %s "$WORK/r")" = "206 bytes 0-0/67108864 1"
s3_curl -D "$WORK/h" -o "$WORK/r" -r -100 "$E/bkt/big/b1.bin"
check "bytes=-100: the last 100 bytes" test "$(status "$WORK/h") $(hdr "$WORK/h" Content-Range)" = "206 bytes 67108764-67108863/67108864" -a "$(cmp "$WORK/r" <(tail -c 100 "$D/big/b1.bin") && echo same)" = same
s3_curl -D "$WORK/h" -o "$WORK/r" -r 67108000-99999999 "$E/bkt/big/b1.bin"
check "range past the end is cut at the end" test "$(status "$WORK/h") $(hdr "$WORK/h" Content-Range) $(stat -c %s "$WORK/r")" = "206 bytes 67108000-67108863/67108864 864"
s3_curl -D "$WORK/h" -o "$WORK/r" -r 67108864-67108870 "$E/bkt/big/b1.bin"
check "range starting at the end: 416 InvalidRange" test "$(status "$WORK/h")" = 416 -a "$(grep -c InvalidRange "$WORK/r")" = 1
s3_curl -D "$WORK/h" -o "$WORK/r" "$E/bkt/odd/zero"
check "empty object: 200, 0 bytes" test "$(status "$WORK/h") $(stat -c %s "$WORK/r")" = "200 0"
s3_curl -D "$WORK/h" -o "$WORK/r" -r 0-99 "$E/bkt/odd/zero"
check "empty object, ranged: 416" test "$(status "$WORK/h")" = 416
s3_curl -I -D "$WORK/h" -o /dev/null "$E/bkt/big/b2.bin"
check "HEAD: 200, Content-Length and ETag" test "$(status "$WORK/h") $(hdr "$WORK/h" Content-Length)" = "200 67108864" -a -n "$(hdr "$WORK/h" ETag)"
s3_curl -D "$WORK/h" -o "$WORK/r" "$E/bkt/nothere"
check "missing key: 404 NoSuchKey" test "$(status "$WORK/h")" = 404 -a "$(grep -c NoSuchKey "$WORK/r")" = 1
s3_curl -D "$WORK/h" -o "$WORK/r" "$(s3_url bkt "many/k00010 with space")"
check "key with a space, percent-encoded: 200" test "$(status "$WORK/h") $(cat "$WORK/r")" = "200 a"

# signatures
curl -s --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:wrong -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
	-D "$WORK/h" -o "$WORK/r" "$E/bkt?list-type=2"
check "wrong secret: 403 SignatureDoesNotMatch" test "$(status "$WORK/h")" = 403 -a "$(grep -c SignatureDoesNotMatch "$WORK/r")" = 1
curl -s --aws-sigv4 "aws:amz:us-east-1:s3" --user NOBODY:S3RVER -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
	-D "$WORK/h" -o "$WORK/r" "$E/bkt/a.bin"
check "unknown access key: 403 InvalidAccessKeyId" test "$(status "$WORK/h")" = 403 -a "$(grep -c InvalidAccessKeyId "$WORK/r")" = 1
curl -s -D "$WORK/h" -o "$WORK/r" "$E/bkt/a.bin"
check "unsigned request: served (s3rver allows anonymous access)" test "$(status "$WORK/h")" = 200
s3_curl -D "$WORK/h" -o "$WORK/r" "$E/nobucket?list-type=2"
check "missing bucket: 404 NoSuchBucket" test "$(status "$WORK/h")" = 404 -a "$(grep -c NoSuchBucket "$WORK/r")" = 1
s3_curl -D "$WORK/h" -o /dev/null "$E/other?list-type=2"
check "second bucket made by s3_start" test "$(status "$WORK/h")" = 200

# conditional requests
s3_curl -D "$WORK/h" -o "$WORK/r" -r 0-9 -H "If-Match: $B1ETAG" "$E/bkt/big/b1.bin"
check "If-Match with the ETag: 206" test "$(status "$WORK/h")" = 206
s3_curl -D "$WORK/h" -o "$WORK/r" -r 0-9 -H 'If-Match: "0123"' "$E/bkt/big/b1.bin"
check "If-Match mismatch: 412 PreconditionFailed" test "$(status "$WORK/h")" = 412 -a "$(grep -c PreconditionFailed "$WORK/r")" = 1
s3_curl -D "$WORK/h" -o /dev/null -H "If-None-Match: $B1ETAG" "$E/bkt/big/b1.bin"
check "If-None-Match with the ETag: 304" test "$(status "$WORK/h")" = 304
s3_curl -D "$WORK/h" -o /dev/null -r 0-9 -H "If-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT" "$E/bkt/big/b1.bin"
check "If-Unmodified-Since in the past: 412" test "$(status "$WORK/h")" = 412

# replacing an object
mkfile "$WORK/v2" 5000000
sleep 1	# Last-Modified has whole seconds
s3_replace bkt big/b1.bin "$WORK/v2" || fail "s3_replace"
s3_curl -D "$WORK/h" -o "$WORK/r" "$E/bkt/big/b1.bin"
check "after s3_replace: the new content" cmp "$WORK/r" "$WORK/v2"
check "after s3_replace: a new ETag, the new MD5" test "$(hdr "$WORK/h" ETag)" = "\"$(md5sum <"$WORK/v2" | cut -d' ' -f1)\""
s3_curl -D "$WORK/h" -o /dev/null -r 0-9 -H "If-Match: $B1ETAG" "$E/bkt/big/b1.bin"
check "after s3_replace: If-Match with the old ETag: 412" test "$(status "$WORK/h")" = 412
s3_curl -o "$WORK/l.xml" "$E/bkt?list-type=2&prefix=big%2F"
check "after s3_replace: listing has the new size" grep -q '<Key>big/b1.bin</Key>.*<Size>5000000</Size>' "$WORK/l.xml"

# 8 concurrent ranged GETs of 8 MiB
for i in 0 1 2 3 4 5 6 7; do
	s3_curl -o "$WORK/c$i" -r $((i << 23))-$((((i + 1) << 23) - 1)) "$E/bkt/big/b2.bin" &
done
wait
cat "$WORK"/c[0-7] >"$WORK/call"
check "8 concurrent 8 MiB ranges of b2.bin: byte-exact" cmp "$WORK/call" "$D/big/b2.bin"
t=$(ms)
s3_curl -o /dev/null "$E/bkt/big/b2.bin"
ok "GET 64 MiB in $(($(ms) - t)) ms"

# stopping, starting again
P=$S3_PID
s3_stop
check "s3_stop: the server is gone" exited "$P"
s3_curl -o /dev/null "$E/bkt?list-type=2" 2>/dev/null
check "s3_stop: connection refused (curl exit 7)" test $? -eq 7
s3_start >/dev/null || fail "s3_start again"
check "a second S3 server: a new port, an empty bucket bkt" test "$S3_ENDPOINT" != "$E" -a "$(s3_curl "$S3_ENDPOINT/bkt?list-type=2" | grep -c '<KeyCount>0</KeyCount>')" = 1

# a server killed behind our back: cleanup copes
kill -9 "$S3_PID"
nginx_start "$SRC" >/dev/null || fail "nginx_start after a kill"
finish
