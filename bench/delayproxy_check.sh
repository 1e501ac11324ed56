#!/bin/bash
# bench/delayproxy_check.sh - measures bench/delayproxy against a private
# nginx (started from a config in a temporary directory, serving a sparse
# 1 GiB file) and prints what it can carry and how exact it is.
#
#   make bench/delayproxy && bench/delayproxy_check.sh
#
# 1. No cap: 16 parallel ranged GETs of 64 MiB each (one curl -Z process),
#    straight from nginx and through the proxy; aggregate MiB/s of both and
#    the proxy's CPU time per GiB carried.
# 2. -b 64M: one connection, 64 MiB: the rate after the first byte.
# 3. -b 16M and -b 64M: 16 connections at once: per-connection rates and
#    the aggregate (on 2 cores the machine, not the cap, may be the limit);
#    -b 64M also with -u (user-space pacing only), and the proxy's CPU time
#    per GiB with each pacer.
# 4. -L 50: 20 small ranged GETs one after the other on one keep-alive
#    connection: time to first byte of each (every request must wait).
# 5. -L 50 -b 64M: one 1 MiB GET: first byte ~50 ms, last ~65.6 ms.
# 6. -L 50: 64 keep-alive connections, 4 small GETs each, all at once.
# 7. -L 50 -b 64M, kernel and -u pacing: 3 GETs (8, 16, 16 MiB) on one
#    keep-alive connection, timed by a client: the most bytes received in
#    any 10 ms and 100 ms window (receiver jitter inflates the 10 ms one).
#
# Prints one "ok ..." or "FAIL: ..." line per check (tolerances are loose:
# other load on the machine shows as lateness, never as earliness), then
# exits 1 if any failed.  Needs nginx and curl; exits 77 without nginx.
set -u
cd "$(dirname "$0")/.."
DP=$PWD/bench/delayproxy
[ -x "$DP" ] || { echo "FAIL: $DP missing: make bench/delayproxy"; exit 1; }
command -v nginx >/dev/null || { echo "no nginx (apt-get install nginx-light)"; exit 77; }
W=$(mktemp -d /tmp/delayproxy_check.XXXXXX)
PIDS=()
FAILS=0
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

ok() { echo "ok $*"; }
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}
# within VALUE LO HI: LO <= VALUE < HI (decimals)
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v < hi) }'; }
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

mkdir -p "$W/www" "$W/tmp"
chmod 755 "$W"	# nginx workers run as nobody
truncate -s 1G "$W/www/big.bin"
NPORT=$(free_port)
cat >"$W/nginx.conf" <<EOF
worker_processes 2;
daemon off;
pid $W/nginx.pid;
error_log $W/nginx.err;
events { worker_connections 1024; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 100000;
	client_body_temp_path $W/tmp;
	proxy_temp_path $W/tmp;
	fastcgi_temp_path $W/tmp;
	uwsgi_temp_path $W/tmp;
	scgi_temp_path $W/tmp;
	server {
		listen 127.0.0.1:$NPORT;
		root $W/www;
	}
}
EOF
nginx -c "$W/nginx.conf" -p "$W" 2>"$W/nginx.out" &
PIDS+=($!)
for _ in $(seq 50); do
	curl -sf -o /dev/null -r 0-0 "http://127.0.0.1:$NPORT/big.bin" && break
	sleep 0.1
done
UP="127.0.0.1:$NPORT"

# proxy NAME [options]: start one; its port in $PORT, its pid in $DPPID
proxy() {
	local name=$1
	shift
	"$DP" "$@" -p "$W/$name.port" "$UP" 2>"$W/$name.err" &
	DPPID=$!
	PIDS+=($DPPID)
	echo "$DPPID" >"$W/$name.pid"
	for _ in $(seq 50); do
		[ -s "$W/$name.port" ] && break
		sleep 0.05
	done
	PORT=$(cat "$W/$name.port")
	head -1 "$W/$name.err"
}

# par PORT N MIB: N parallel ranged GETs of MIB MiB each, disjoint, in one
# curl process.  Prints "aggregate_MiB/s mean_conn_MiB/s min_conn_MiB/s",
# per-connection rates taken after the first byte.
par() {
	local port=$1 n=$2 mib=$3 i a s e args=()
	for ((i = 0; i < n; i++)); do
		a=$((i * mib * 1048576))
		[ $i -gt 0 ] && args+=(--next)
		args+=(-s -o /dev/null -r "$a-$((a + mib * 1048576 - 1))"
		       -w '%{size_download} %{time_starttransfer} %{time_total}\n'
		       "http://127.0.0.1:$port/big.bin")
	done
	s=$(date +%s.%N)
	curl -Z --parallel-max "$n" --parallel-immediate "${args[@]}" \
		>"$W/par.out" 2>/dev/null
	e=$(date +%s.%N)
	awk -v wall="$(echo "$e - $s" | bc)" '
		{ b += $1; r = $1 / ($3 - $2) / 1048576; sum += r;
		  if (min == "" || r < min) min = r }
		END { printf "%.1f %.1f %.1f\n", b / wall / 1048576, sum / NR, min }' \
		"$W/par.out"
}

echo "== 1. no cap: 16 x 64 MiB ranged GETs"
read -r direct _ _ < <(par "$NPORT" 16 64)
proxy nocap >/dev/null
c0=$(cpu_ticks "$DPPID")
read -r via _ _ < <(par "$PORT" 16 64)
c1=$(cpu_ticks "$DPPID")
read -r direct2 _ _ < <(par "$NPORT" 16 64)
cpu_ms=$(( (c1 - c0) * 1000 / $(getconf CLK_TCK) ))
ok "nginx direct $direct / $direct2 MiB/s, through delayproxy $via MiB/s; proxy CPU ${cpu_ms} ms per GiB"
within "$via" "$(echo "$direct * 0.6" | bc)" 1e9 ||
	fail "the proxy carries less than 60% of the direct rate"

echo "== 2. -b 64M, one connection"
proxy b64 -b 64M
read -r _ rate _ < <(par "$PORT" 1 64)
if within "$rate" 60.8 67.2; then ok "one connection: $rate MiB/s (cap 64)"
else fail "one connection: $rate MiB/s, want 64 +-5%"; fi

echo "== 3. 16 connections"
proxy b16 -b 16M
read -r agg mean min < <(par "$PORT" 16 32)
if within "$min" 13.6 16.8; then ok "-b 16M x16: per connection mean $mean min $min MiB/s, aggregate $agg MiB/s (ideal 256)"
else fail "-b 16M x16: per connection mean $mean min $min MiB/s (want 16, >= 85%), aggregate $agg"; fi
c0=$(cpu_ticks "$(cat "$W/b64.pid")")
read -r agg mean min < <(par "$(cat "$W/b64.port")" 16 64)
c1=$(cpu_ticks "$(cat "$W/b64.pid")")
ok "-b 64M x16: per connection mean $mean min $min MiB/s, aggregate $agg MiB/s (ideal 1024; no cap: $via); proxy CPU $(( (c1 - c0) * 1000 / $(getconf CLK_TCK) )) ms per GiB"
proxy b64u -b 64M -u >/dev/null
c0=$(cpu_ticks "$DPPID")
read -r agg mean min < <(par "$PORT" 16 64)
c1=$(cpu_ticks "$DPPID")
ok "-b 64M -u x16: per connection mean $mean min $min MiB/s, aggregate $agg MiB/s; proxy CPU $(( (c1 - c0) * 1000 / $(getconf CLK_TCK) )) ms per GiB"

echo "== 4. -L 50: 20 requests on one connection"
proxy lat -L 50
args=()
for i in $(seq 20); do
	[ $i -gt 1 ] && args+=(--next)
	args+=(-s -o /dev/null -r "$((i * 4096))-$((i * 4096 + 4095))"
	       -w '%{time_starttransfer} %{num_connects}\n'
	       "http://127.0.0.1:$PORT/big.bin")
done
curl "${args[@]}" >"$W/lat.out"
read -r lmin lmean lmax conns < <(awk '{ t = $1 * 1000; s += t; c += $2;
	if (min == "" || t < min) min = t; if (t > max) max = t }
	END { printf "%.2f %.2f %.2f %d\n", min, s / NR, max, c }' "$W/lat.out")
if [ "$conns" = 1 ] && within "$lmin" 50 53 && within "$lmean" 50 56; then
	ok "first byte after min $lmin mean $lmean max $lmax ms (20 requests, $conns connection)"
else
	fail "first byte after min $lmin mean $lmean max $lmax ms, $conns connection(s) (want 50..53, mean < 56, 1)"
fi

echo "== 5. -L 50 -b 64M: one 1 MiB GET"
proxy latbw -L 50 -b 64M
t=$(curl -s -o /dev/null -r 0-1048575 -w '%{time_starttransfer} %{time_total}' "http://127.0.0.1:$PORT/big.bin")
read -r t1 t2 < <(awk '{ printf "%.2f %.2f\n", $1 * 1000, $2 * 1000 }' <<<"$t")
if within "$t1" 50 56 && within "$t2" 64.5 72; then
	ok "1 MiB: first byte at $t1 ms, last at $t2 ms (ideal 50, 65.6)"
else
	fail "1 MiB: first byte at $t1 ms, last at $t2 ms (ideal 50, 65.6)"
fi

echo "== 6. -L 50: 64 connections x 4 requests at once"
args=()
for i in $(seq 256); do
	[ $i -gt 1 ] && args+=(--next)
	args+=(-s -o /dev/null -r "$((i * 4096))-$((i * 4096 + 4095))"
	       -w '%{http_code} %{time_starttransfer} %{num_connects}\n'
	       "http://127.0.0.1:$(cat "$W/lat.port")/big.bin")
done
curl -Z --parallel-max 64 "${args[@]}" >"$W/many.out" 2>/dev/null
read -r n206 reused rmin rmean rmax < <(awk '$1 == 206 { n++ }
	$3 == 0 { t = $2 * 1000; k++; s += t;
		  if (min == "" || t < min) min = t; if (t > max) max = t }
	END { printf "%d %d %.2f %.2f %.2f\n", n, k, min, s / k, max }' "$W/many.out")
if [ "$n206" = 256 ] && within "$rmin" 50 60; then
	ok "256 answers; on reused connections ($reused) first byte after min $rmin mean $rmean max $rmax ms"
else
	fail "$n206 of 256 answers; on reused connections ($reused) first byte after min $rmin mean $rmean max $rmax ms"
fi

echo "== 7. -L 50 -b 64M: the most bytes in any 10 ms / 100 ms window"
# win PORT: 3 GETs on one connection; per response "first_ms rate max10
# max100" (MiB/s; rate from first byte to last)
win() {
	python3 - "$1" <<'PY'
import bisect, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
off = 0
for n in (8 << 20, 16 << 20, 16 << 20):
    # before the send: on loopback the sender may run the receive side
    t0 = time.monotonic()
    s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=%d-%d\r\n\r\n"
              % (off, off + n - 1))
    off += n
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(1 << 20)
    t1 = time.monotonic()
    ts, cum = [t1], [0, len(buf.split(b"\r\n\r\n", 1)[1])]
    while cum[-1] < n:
        d = s.recv(1 << 20)
        if not d:
            break
        ts.append(time.monotonic())
        cum.append(cum[-1] + len(d))
    best = []
    for w in (0.01, 0.1):
        b = max(cum[bisect.bisect_right(ts, t + w)] - cum[i]
                for i, t in enumerate(ts))
        best.append(b / w / 2**20)
    print("%.1f %.1f %.1f %.1f" % ((t1 - t0) * 1e3,
          (cum[-1] - cum[1]) / (ts[-1] - t1) / 2**20, best[0], best[1]))
PY
}
for m in kernel user; do
	if [ $m = kernel ]; then proxy win -L 50 -b 64M >/dev/null
	else proxy winu -L 50 -b 64M -u >/dev/null; fi
	i=0
	while read -r first rate m10 m100; do
		i=$((i + 1))
		if within "$m100" 0 70.4 && within "$rate" 60.8 67.2; then
			ok "$m pacing, GET $i: first byte $first ms, $rate MiB/s, at most $m10 MiB/s over 10 ms, $m100 over 100 ms"
		else
			fail "$m pacing, GET $i: first byte $first ms, $rate MiB/s, at most $m10 MiB/s over 10 ms, $m100 over 100 ms (want 64 +-5%, <= 70.4 over 100 ms)"
		fi
	done < <(win "$PORT")
done

for p in "${PIDS[@]:1}"; do kill "$p" 2>/dev/null; done
sleep 0.3
for f in "$W"/*.err; do
	[ "$(basename "$f")" = nginx.err ] && continue
	grep -v '^delayproxy: 127.0.0.1:' "$f" | grep -v 'connections (0 upstream failures)' | grep . &&
		fail "unexpected output in $(basename "$f")"
done
tail -qn1 "$W/lat.err"
if [ $FAILS -gt 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all checks passed"
