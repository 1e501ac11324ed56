#!/bin/bash
# faultd_selftest.sh - exercises tests/helpers/faultd.py with the curl CLI:
# the static server (index, HEAD, ranges, validators, keep-alive), every
# fault mode, the rule keys, the control endpoints, the request log and
# shutdown with a request hanging.  One "ok ..." or "FAIL: ..." line per
# check; exit 0 when all passed, 1 otherwise.
#
#   tests/helpers/faultd_selftest.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
FAULTD="$HERE/faultd.py"
W=$(mktemp -d /tmp/faultd_selftest.XXXXXX)
FAILS=0
PID=

cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

ok() { echo "ok $*"; }
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}
check() { # check "what" command...
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}

# start_faultd [faultd options...]: start it, wait for its port file
start_faultd() {
	rm -f "$W/port"
	python3 "$FAULTD" --port-file "$W/port" --log-file "$W/log.jsonl" \
		"$@" "$W/root" 2>"$W/stderr" &
	PID=$!
	for _ in $(seq 100); do
		[ -s "$W/port" ] && break
		sleep 0.1
	done
	if [ ! -s "$W/port" ]; then
		echo "FAIL: faultd did not start"
		cat "$W/stderr"
		exit 1
	fi
	PORT=$(cat "$W/port")
	U="http://127.0.0.1:$PORT"
}

# stop_faultd: SIGTERM, must be gone within 3 s with status 0
stop_faultd() {
	local rc
	kill -TERM "$PID"
	for _ in $(seq 30); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$PID" 2>/dev/null; then
		fail "faultd exits within 3 s of SIGTERM"
		kill -KILL "$PID"
	fi
	wait "$PID"
	rc=$?
	PID=
	return $rc
}

fault() { curl -sf "$U/_fault?$1" >/dev/null || fail "adding rule $1"; }
clear_all() {
	curl -sf -X DELETE "$U/_fault" >/dev/null
	curl -sf -X DELETE "$U/_log" >/dev/null
}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
header() { # header NAME FILE: the value of header NAME in a dump
	grep -i "^$1:" "$2" | head -1 | cut -d' ' -f2- | tr -d '\r'
}
# log_py EXPR: evaluate EXPR on the request log (list L of dicts)
log_py() {
	curl -s "$U/_log" | python3 -c '
import json, sys
L = [json.loads(l) for l in sys.stdin if l.strip()]
print(eval(sys.argv[1]))' "$1"
}

mkdir -p "$W/root/sub" "$W/root/dir with space"
head -c 1000000 /dev/urandom >"$W/root/a.bin"
SIZE=1000000
echo hello >"$W/root/sub/h.txt"
: >"$W/root/empty"
echo x >"$W/root/.hidden"
echo y >"$W/root/dir with space/f&g.txt"
A="$W/root/a.bin"

start_faultd
ok "faultd started on port $PORT"

# ---- the static server ----------------------------------------------------
curl -s "$U/" | tr -d '\r' >"$W/index.html"
check "html index: a.bin with its exact size" \
	grep -qE '^<a href="a.bin">a.bin</a> +[0-9]{2}-[A-Z][a-z]{2}-[0-9]{4} [0-9]{2}:[0-9]{2} +1000000$' "$W/index.html"
check "html index: sub/ as a directory, dot files hidden" \
	bash -c "grep -q '<a href=\"sub/\">sub/</a> .* -\$' '$W/index.html' && ! grep -q hidden '$W/index.html'"
check "html index: names are escaped" \
	grep -q 'href="dir%20with%20space/"' "$W/index.html"
check "html index of a subdirectory" \
	bash -c "curl -s '$U/dir%20with%20space/' | grep -q 'href=\"f%26g.txt\">f&amp;g.txt</a>'"
check "directory without '/' -> 301" \
	[ "$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "$U/sub")" = "301 $U/sub/" ]
check "json index (?format=json)" \
	[ "$(curl -s "$U/?format=json" | python3 -c 'import json,sys; d={e["name"]: e for e in json.load(sys.stdin)}; print(d["a.bin"]["size"], d["a.bin"]["type"], d["sub"]["type"], "size" in d["sub"], len(d))')" = "1000000 file directory False 4" ]

curl -s -I "$U/a.bin" >"$W/head"
ETAG=$(header ETag "$W/head")
check "HEAD: 200, Content-Length, Accept-Ranges, Last-Modified" \
	bash -c "grep -q '^HTTP/1.1 200' '$W/head' && grep -qi '^Content-Length: 1000000' '$W/head' && grep -qi '^Accept-Ranges: bytes' '$W/head' && grep -qi '^Last-Modified: .* GMT' '$W/head'"
check "ETag is a quoted strong tag ($ETAG)" \
	bash -c "[[ '$ETAG' =~ ^\\\"[^\\\"]+\\\"\$ ]]"
check "GET of the whole file is byte-exact" \
	bash -c "curl -s '$U/a.bin' | cmp -s - '$A'"
check "404 for a missing file" [ "$(code "$U/nope")" = 404 ]

curl -s -D "$W/h" -r 100-199 "$U/a.bin" -o "$W/body"
check "range a-b: 206, Content-Range, the bytes" \
	bash -c "grep -q '^HTTP/1.1 206' '$W/h' && [ \"\$(grep -i '^Content-Range' '$W/h' | tr -d '\r')\" = 'Content-Range: bytes 100-199/1000000' ] && cmp -s '$W/body' <(tail -c +101 '$A' | head -c 100)"
curl -s -D "$W/h" -r 999990- "$U/a.bin" -o "$W/body"
check "range a-: the tail" \
	bash -c "grep -qi '^Content-Range: bytes 999990-999999/1000000' '$W/h' && cmp -s '$W/body' <(tail -c 10 '$A')"
curl -s -D "$W/h" -H 'Range: bytes=-5' "$U/a.bin" -o "$W/body"
check "range -n: the last n bytes" \
	bash -c "grep -qi '^Content-Range: bytes 999995-999999/1000000' '$W/h' && cmp -s '$W/body' <(tail -c 5 '$A')"
check "range past the end is clamped" \
	bash -c "curl -s -D - -o /dev/null -r 999000-2000000 '$U/a.bin' | grep -qi '^Content-Range: bytes 999000-999999/1000000'"
curl -s -D "$W/h" -r 1000000-1000010 "$U/a.bin" -o /dev/null
check "unsatisfiable range -> 416, Content-Range bytes */size" \
	bash -c "grep -q '^HTTP/1.1 416' '$W/h' && grep -qi '^Content-Range: bytes \*/1000000' '$W/h'"
check "any range of an empty file -> 416" \
	[ "$(code -r 0-0 "$U/empty")" = 416 ]
check "If-Match with the ETag -> 206" \
	[ "$(code -r 0-9 -H "If-Match: $ETAG" "$U/a.bin")" = 206 ]
check "If-Match with another ETag -> 412" \
	[ "$(code -r 0-9 -H 'If-Match: "nope"' "$U/a.bin")" = 412 ]
check "If-None-Match with the ETag -> 304" \
	[ "$(code -H "If-None-Match: $ETAG" "$U/a.bin")" = 304 ]
check "If-Range with another ETag -> 200, whole file" \
	[ "$(code -r 0-9 -H 'If-Range: "nope"' "$U/a.bin")" = 200 ]
curl -sf -X DELETE "$U/_log" >/dev/null
curl -s -r 0-9 "$U/a.bin" -o /dev/null -r 10-19 "$U/a.bin" -o /dev/null
check "keep-alive: two requests on one connection" \
	[ "$(log_py 'len(L) == 2 and L[0]["conn"] == L[1]["conn"]')" = True ]

# ---- fault modes ----------------------------------------------------------
clear_all
fault "path=/a.bin&mode=status:500&count=2"
r="$(code "$U/a.bin") $(code "$U/a.bin") $(code "$U/a.bin")"
check "status:500 count=2 -> 500 500 200 ($r)" [ "$r" = "500 500 200" ]
check "the log shows the 500s and the fault" \
	[ "$(log_py '[(e["status"], e["fault"]) for e in L]')" = "[(500, 'status:500'), (500, 'status:500'), (200, None)]" ]
fault "mode=status:503"
check "status:503 -> S3 SlowDown body" \
	bash -c "curl -s '$U/a.bin' | grep -q '<Code>SlowDown</Code>'"
fault "mode=status:500"
check "status:500 -> S3 InternalError body" \
	bash -c "curl -s '$U/a.bin' | grep -q '<Code>InternalError</Code>'"
fault "mode=status:429"
curl -s -D "$W/h" -o /dev/null "$U/a.bin"
check "status:429 -> Retry-After: 1" \
	bash -c "grep -q '^HTTP/1.1 429' '$W/h' && grep -qi '^Retry-After: 1' '$W/h'"
fault "mode=status:503&retry_after=7"
check "retry_after=7 on a 503" \
	bash -c "curl -s -D - -o /dev/null '$U/a.bin' | grep -qi '^Retry-After: 7'"
fault "mode=status:500"
curl -s -o /dev/null -r 0-9 "$U/a.bin" -o /dev/null -r 0-9 "$U/a.bin"
check "the connection stays open after an injected status" \
	[ "$(log_py 'L[-1]["conn"] == L[-2]["conn"] and L[-2]["status"] == 500')" = True ]

fault "path=/a.bin&mode=cut:1000"
curl -s "$U/a.bin" -o "$W/body"
rc=$?
check "cut:1000 -> curl 18 (partial file), 1000 bytes ($rc, $(stat -c %s "$W/body"))" \
	bash -c "[ $rc = 18 ] && cmp -s '$W/body' <(head -c 1000 '$A')"
fault "path=/a.bin&mode=cut:0"
rm -f "$W/body"
curl -s -r 0-99 "$U/a.bin" -o "$W/body"
rc=$?
check "cut:0 of a range -> curl 18, no body ($rc)" \
	bash -c "[ $rc = 18 ] && [ ! -s '$W/body' ]"
fault "path=/a.bin&mode=cut:5000&rst=1"
curl -s "$U/a.bin" -o /dev/null
rc=$?
check "cut with rst=1 -> connection reset or short body ($rc)" \
	bash -c "[ $rc = 56 ] || [ $rc = 18 ]"
check "the log has the bytes sent by a cut" \
	[ "$(log_py '[e["bytes"] for e in L if e["fault"] and e["fault"].startswith("cut")]')" = "[1000, 0, 5000]" ]
fault "mode=drop"
curl -s "$U/a.bin" -o /dev/null
rc=$?
check "drop -> curl 52 (empty reply) ($rc)" [ $rc = 52 ]

fault "mode=ignore_range"
check "ignore_range matches no unranged request" \
	[ "$(code "$U/a.bin")" = 200 ]
curl -s -D "$W/h" -r 100-199 "$U/a.bin" -o "$W/body"
check "ignore_range -> 200 with the whole file" \
	bash -c "grep -q '^HTTP/1.1 200' '$W/h' && ! grep -qi '^Content-Range' '$W/h' && cmp -s '$W/body' '$A'"
check "the rule was used up" \
	[ "$(code -r 0-1 "$U/a.bin")" = 206 ]

fault "mode=wrong_range"
curl -s -D "$W/h" -r 100-199 "$U/a.bin" -o "$W/body"
check "wrong_range -> 206 for 200-299, and those bytes" \
	bash -c "grep -qi '^Content-Range: bytes 200-299/1000000' '$W/h' && cmp -s '$W/body' <(tail -c +201 '$A' | head -c 100)"
fault "mode=wrong_range:1"
check "wrong_range:1 -> 206 for 101-200" \
	bash -c "curl -s -D - -o /dev/null -r 100-199 '$U/a.bin' | grep -qi '^Content-Range: bytes 101-200/1000000'"
fault "mode=wrong_range"
check "wrong_range at the end of the file wraps" \
	bash -c "curl -s -D - -o /dev/null -r 999900- '$U/a.bin' | grep -qi '^Content-Range: bytes 0-99/1000000'"

clear_all
cp "$A" "$W/orig"
fault "path=/a.bin&mode=replace_after:2"
e1=$(curl -s -D - -o "$W/b1" "$U/a.bin" | grep -i '^ETag' | tr -d '\r')
e2=$(curl -s -D - -o "$W/b2" -r 0-9 "$U/a.bin" | grep -i '^ETag' | tr -d '\r')
curl -s -I "$U/a.bin" >/dev/null	# HEAD does not count
e3=$(curl -s -D - -o "$W/b3" "$U/a.bin" | grep -i '^ETag' | tr -d '\r')
check "replace_after:2: two GETs see the original" \
	bash -c "[ '$e1' = '$e2' ] && cmp -s '$W/b1' '$W/orig'"
check "replace_after:2: the third GET sees new bytes, same size, new ETag" \
	bash -c "[ '$e3' != '$e1' ] && ! cmp -s '$W/b3' '$W/orig' && [ \$(stat -c %s '$W/b3') = $SIZE ] && cmp -s '$W/b3' '$A'"
check "replace_after: the old ETag now gets 412" \
	[ "$(code -r 0-9 -H "If-Match: ${e1#*: }" "$U/a.bin")" = 412 ]
check "replace_after: no byte equals the original" \
	python3 -c "import sys; a=open('$W/b3','rb').read(); b=open('$W/orig','rb').read(); sys.exit(any(x == y for x, y in zip(a, b)))"
curl -sf "$U/_replace?path=/a.bin" >/dev/null
check "/_replace puts the original back (XOR twice)" cmp -s "$A" "$W/orig"

fault "path=/a.bin&mode=hang"
curl -s -m 1 "$U/a.bin" -o /dev/null
rc=$?
check "hang -> curl times out (28) ($rc)" [ $rc = 28 ]
check "a hang does not block other requests" [ "$(code -r 0-0 "$U/a.bin")" = 206 ]
fault "path=/a.bin&mode=hang_body:100"
r=$(curl -s -m 1 -w '%{http_code}' "$U/a.bin" -o "$W/body")
rc=$?
check "hang_body:100 -> headers and 100 bytes, then a stall ($rc $r)" \
	bash -c "[ $rc = 28 ] && [ '$r' = 200 ] && cmp -s '$W/body' <(head -c 100 '$A')"
fault "path=/a.bin&mode=delay:300"
t=$(curl -s -o /dev/null -w '%{time_total}' -r 0-0 "$U/a.bin")
check "delay:300 -> >= 0.3 s ($t s)" python3 -c "import sys; sys.exit(not 0.3 <= $t < 1.0)"
fault "path=/a.bin&mode=status:500&delay=200"
t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$U/a.bin")
check "delay= with another mode ($t)" python3 -c "import sys; c, t = '$t'.split(); sys.exit(not (c == '500' and float(t) >= 0.2))"

# ---- rule keys ------------------------------------------------------------
clear_all
fault "path=/sub/*&mode=status:503&count=inf"
r="$(code "$U/a.bin") $(code "$U/sub/h.txt") $(code "$U/sub/h.txt") $(code "$U/sub/")"
check "path glob and count=inf ($r)" [ "$r" = "200 503 503 503" ]
clear_all
fault "path=/a.bin&mode=status:500&method=HEAD"
r="$(code "$U/a.bin") $(code -I "$U/a.bin") $(code -I "$U/a.bin")"
check "method=HEAD ($r)" [ "$r" = "200 500 200" ]
fault "path=/a.bin&mode=status:500&skip=2&count=1"
r="$(code "$U/a.bin") $(code "$U/a.bin") $(code "$U/a.bin") $(code "$U/a.bin")"
check "skip=2 ($r)" [ "$r" = "200 200 500 200" ]
fault "mode=status:500&count=3"
fault "mode=status:503&count=1"
check "GET /_fault lists the rules" \
	[ "$(curl -s "$U/_fault" | python3 -c 'import json,sys; print([(r["mode"], r["count"]) for r in json.load(sys.stdin)])')" = "[('status:500', 3), ('status:503', 1)]" ]
check "the first rule that matches applies" [ "$(code "$U/a.bin")" = 500 ]
curl -sf "$U/_fault?clear=1" >/dev/null
check "clear=1 removes the rules" [ "$(code "$U/a.bin")" = 200 ]
check "a bad rule is refused with 400" \
	[ "$(code "$U/_fault?mode=explode")" = 400 ]
check "a rule with an unknown key is refused" \
	[ "$(code "$U/_fault?mode=drop&cuont=2")" = 400 ]
check "POST works for rules" \
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$U/_fault?mode=status:500")" = 200 ]
curl -sf -X DELETE "$U/_fault" >/dev/null

# ---- the log --------------------------------------------------------------
curl -sf -X DELETE "$U/_log" >/dev/null
curl -s -r 5-9 -H "If-Match: \"x\"" "$U/a.bin" -o /dev/null
check "log: method, path, range, if_match, status" \
	[ "$(log_py '[(e["method"], e["path"], e["range"], e["if_match"], e["status"]) for e in L]')" = "[('GET', '/a.bin', 'bytes=5-9', '\"x\"', 412)]" ]
curl -s -r 10-19 "$U/a.bin" -o /dev/null
curl -s -H 'Range: bytes=-5' "$U/a.bin" -o /dev/null
curl -s "$U/a.bin" -o /dev/null
fault "mode=wrong_range"
curl -s -r 100-199 "$U/a.bin" -o /dev/null
check "log: asked and sent ranges" \
	[ "$(log_py '[(e["asked"], e["sent"]) for e in L[-4:]]')" = "[([10, 19], [10, 19]), ([999995, 999999], [999995, 999999]), (None, [0, 999999]), ([100, 199], [200, 299])]" ]
s=$(log_py 'L[-1]["seq"]')
curl -s "$U/sub/h.txt" -o /dev/null
check "log ?since=SEQ" \
	[ "$(curl -s "$U/_log?since=$((s + 1))" | wc -l)" = 1 ]
check "control requests are not logged" \
	[ "$(log_py 'any(e["path"].startswith("/_") for e in L)')" = False ]
check "--log-file has the same lines" \
	[ "$(tail -1 "$W/log.jsonl")" = "$(curl -s "$U/_log" | tail -1)" ]

# ---- shutdown ---------------------------------------------------------------
fault "mode=hang"
curl -s -m 10 "$U/a.bin" -o /dev/null &
CURL=$!
sleep 0.3
stop_faultd
rc=$?
check "SIGTERM with a request hanging: exit 0 at once ($rc)" [ $rc = 0 ]
wait $CURL
rc=$?
check "the hanging client sees the connection close ($rc)" \
	bash -c "[ $rc = 52 ] || [ $rc = 56 ]"
check "no traceback on stderr" bash -c "! grep -q Traceback '$W/stderr'"

# ---- command-line rules, --json-index -----------------------------------------
start_faultd --json-index --fault 'path=/a.bin&mode=status:503&count=1'
r="$(code "$U/a.bin") $(code "$U/a.bin")"
check "--fault on the command line ($r)" [ "$r" = "503 200" ]
check "--json-index: JSON by default, ?format=html for HTML" \
	bash -c "curl -s '$U/' | python3 -c 'import json,sys; json.load(sys.stdin)' && curl -s '$U/?format=html' | grep -q '<h1>Index of /</h1>'"
stop_faultd
check "no traceback on stderr (second run)" bash -c "! grep -q Traceback '$W/stderr'"
if python3 "$FAULTD" --fault 'mode=nope' "$W/root" 2>"$W/err"; then
	fail "a bad --fault is refused"
else
	check "a bad --fault is refused with one line" \
		[ "$(wc -l <"$W/err")" = 1 ]
fi

if [ $FAILS -gt 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all checks passed"
