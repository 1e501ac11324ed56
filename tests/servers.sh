# Real servers for the mount tests of the HTTP and S3 backends, on
# 127.0.0.1, each on a port of its own, all state under $WORK.  Source it
# after tests/lib.sh.  Every server started here is stopped at the test's
# exit, after the mounts are gone, whatever the exit (lib.sh's cleanup runs
# the CLEANUP_HOOKS); a server also stops by itself within a second or two
# when the test shell is killed with SIGKILL.
#
#   nginx_start ROOT [--json] [--tls|--tls-http1]
#       nginx serving the directory ROOT: autoindex (HTML with exact sizes,
#       or JSON with --json), ETag, ranges, If-Match (412), keep-alive for
#       100000 requests.  --tls: HTTPS with HTTP/2, certificate of a
#       private CA for IP:127.0.0.1 and DNS:localhost; --tls-http1: the
#       same without HTTP/2 (S3 speaks HTTP/1.1 over TLS).  Sets NGINX_URL
#       (http://127.0.0.1:PORT/ or https://...), NGINX_PORT, NGINX_PID,
#       NGINX_DIR (config, access.log, error.log), NGINX_CACERT (the CA's
#       certificate, PEM; with TLS only, else empty); prints NGINX_URL.
#   s3_start [BUCKET...]
#       S3-compatible server (@20minutes/s3rver: checks SigV4 signatures)
#       with the BUCKETs made (default: one, "bkt").  Sets S3_ENDPOINT
#       (http://127.0.0.1:PORT), S3_PORT, S3_PID, S3_DIR (log), S3_DATA
#       (its object store), S3_BUCKET (the first bucket), S3_KEY, S3_SECRET,
#       S3_REGION; prints S3_ENDPOINT.  With S3_KEYS=FILE it also takes
#       the temporary keys listed in FILE (tests/s3/s3server.js --keys).
#   s3_put_tree BUCKET PREFIX DIR
#       every file DIR/a/b becomes the object PREFIX + "a/b" ("p/" + "a/b"
#       is "p/a/b") of the last S3 server started; fast (through the
#       server's store: 2,500 small files or 64 MiB in about a second).
#   s3_replace BUCKET KEY FILE
#       overwrite (or create) one object with a signed PUT through the server
#   s3_curl CURL-ARGS...
#       curl signing with S3_KEY/S3_SECRET (SigV4, unsigned payload)
#   s3_url BUCKET [KEY]
#       $S3_ENDPOINT/BUCKET/KEY with KEY percent-encoded
#   delayproxy_start HOST:PORT LATENCY_MS BYTES_PER_SEC
#       bench/delayproxy in front of the server at HOST:PORT (a store far
#       away: first-byte latency, a bandwidth cap per connection).  Sets
#       DELAY_URL (http://127.0.0.1:PORT), DELAY_PID, DELAY_DIR (its log:
#       the first line says what it simulates, SIGUSR1 adds byte totals)
#       and DELAY_DESC (that line without the addresses); prints DELAY_URL.
#   faultd_start ROOT [FAULTD-OPTS...]
#       tests/helpers/faultd.py serving the directory ROOT, faults and a
#       request log on demand (its own usage tells the options), every
#       request also appended to FAULTD_DIR/requests.jsonl.  Sets
#       FAULTD_URL (http://127.0.0.1:PORT, no final /), FAULTD_PORT,
#       FAULTD_PID, FAULTD_DIR (log, requests.jsonl); prints FAULTD_URL.
#   faultd_fault URL RULE / faultd_reset URL / faultd_log URL EXPR
#       the faultd at URL: add a fault RULE (a test fails if it cannot) /
#       drop its rules and empty its request log / print the Python EXPR
#       over its request log: L (every entry), H(NAME) and G(NAME) (the
#       HEADs and GETs of /NAME)
#   memcached_start ADDR [MEMCACHED-OPTS...]
#       memcached on ADDR (127.0.0.x: each "node" of a test its own
#       address) and a free port, 64 MiB, text protocol only (no UDP).
#       Sets MC_SERVER (ADDR:PORT), MC_PID, MC_DIR; prints MC_SERVER.
#   memcached_restart DIR
#       stop the memcached of DIR (its MC_DIR) and start it again on the
#       same address and port, empty; sets MC_PID
#   tier_nodes_start DIR N MS
#       the servers of a shared-tier test of N nodes: memcached on
#       127.0.0.2 on (MCS, LIST), nginx serving DIR behind delayproxy (MS
#       ms, 64 MiB/s: DELAY_URL), a secret (SECRET); a failure ends the test
#   mc_cmd ADDR:PORT COMMAND...
#       send COMMANDs (text protocol, each ended with CRLF) and print the
#       answer; "mc_cmd S stats" ends at END
#   mc_set ADDR:PORT KEY FILE
#       store FILE's bytes under KEY with memcached's own text protocol
#       (a forged value); true if STORED
#   nginx_stop / s3_stop
#       stop the last nginx / S3 server started (to test a dead server);
#       server_stop DIR stops the one whose NGINX_DIR, S3_DIR or MC_DIR is
#       DIR
#   servers_stop_all
#       stop every server of the test (run at exit)
# Each *_start returns non-zero (and prints the server's log) when the
# server does not come up within a few seconds.  Calling one inside $(...)
# works (the server is still stopped at exit) but loses the variables.
#
# Example, a mount test of the S3 backend:
#
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/servers.sh"
#   need_fuse
#   need_tools
#   mkdir -p "$WORK/src/sub"
#   mkfile "$WORK/src/big.bin" $((64 << 20))
#   mkfile "$WORK/src/sub/a.bin" 12345
#   s3_start data || { fail "s3 server"; finish; }
#   s3_put_tree data ds/ "$WORK/src"
#   AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET \
#       pf_mount s3://data/ds/ "$WORK/mnt" -o endpoint="$S3_ENDPOINT" ||
#       { fail "mount"; finish; }
#   check "big.bin byte-exact" cmp "$WORK/src/big.bin" "$WORK/mnt/big.bin"
#   mkfile "$WORK/v2" 4096
#   s3_replace data ds/sub/a.bin "$WORK/v2"
#   ...
#   finish
#
# and of the HTTPS backend:
#
#   nginx_start "$WORK/src" --json --tls || { fail "nginx"; finish; }
#   pf_mount "$NGINX_URL" "$WORK/mnt" -o cacert="$NGINX_CACERT" || ...

SERVERS_DIR=$WORK/servers
CLEANUP_HOOKS+=(servers_stop_all)
S3_KEY=S3RVER	# the account built into s3rver
S3_SECRET=S3RVER
S3_REGION=us-east-1

# _srv_dir NAME: a new directory for one server, printed
_srv_dir() {
	local i=1
	mkdir -p "$SERVERS_DIR"
	while ! mkdir "$SERVERS_DIR/$1.$i" 2>/dev/null; do
		i=$((i + 1))
	done
	echo "$SERVERS_DIR/$1.$i"
}

# _srv_free_port: a TCP port of 127.0.0.1 nobody listens on right now
_srv_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# _srv_spawn DIR CMD...: start CMD in the background, not as a job of the
# test shell (lib.sh's cleanup kills those first, before the unmounts),
# output to DIR/log, pid in DIR/pid; a watchdog stops it once this test's
# shell is gone.  Prints the pid.
_srv_spawn() {
	local dir=$1 pid
	shift
	(
		PF_PARENT_PID=$$ "$@" </dev/null >"$dir/log" 2>&1 &
		echo $! >"$dir/pid"
	)
	pid=$(cat "$dir/pid")
	(
		while kill -0 "$pid" 2>/dev/null; do
			if ! kill -0 $$ 2>/dev/null; then
				kill "$pid"
				break
			fi
			sleep 1
		done
	) </dev/null >/dev/null 2>&1 &
	disown $!
	echo "$pid"
}

# How long a server may take to come up: generous, as a busy machine
# (a parallel build, other tests) can take seconds to start node; it
# costs nothing when the server is quick.
SRV_START_SECS=${SRV_START_SECS:-30}

# _srv_until SECS: true until SECS seconds have passed since it was
# first called with a fresh _SRV_T0 (the caller unsets _SRV_T0)
_srv_until() {
	[ -n "${_SRV_T0:-}" ] || _SRV_T0=$(date +%s%N)
	[ $(( ($(date +%s%N) - _SRV_T0) / 1000000000 )) -lt "$1" ]
}

# _srv_wait DIR PID URL [CURL-ARGS...]: wait (at most SRV_START_SECS)
# until URL answers with any HTTP status; fail at once if PID exits.
_srv_wait() {
	local dir=$1 pid=$2 url=$3 code
	shift 3
	_SRV_T0=
	while _srv_until "$SRV_START_SECS"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "server in $dir exited; its log:"
			cat "$dir/log" "$dir/error.log" 2>/dev/null | tail -20
			return 1
		fi
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$@" "$url")
		[ "$code" != 000 ] && return 0
		sleep 0.05
	done
	echo "server in $dir does not answer at $url after $SRV_START_SECS s; its log:"
	cat "$dir/log" "$dir/error.log" 2>/dev/null | tail -20
	server_stop "$dir"
	return 1
}

# _srv_port DIR PID NAME: wait (at most SRV_START_SECS) for a server that
# picks its own port until it has written it to DIR/port; fail at once if
# PID exits.  On failure prints NAME's log and stops it.
_srv_port() {
	_SRV_T0=
	while _srv_until "$SRV_START_SECS"; do
		[ -s "$1/port" ] && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.05
	done
	[ -s "$1/port" ] && return 0
	echo "$3 in $1 did not start; its log:"
	tail -20 "$1/log"
	server_stop "$1"
	return 1
}

# server_stop DIR: stop the server of DIR (TERM, then KILL after 5 s)
server_stop() {
	local pid
	pid=$(cat "$1/pid" 2>/dev/null) || return 0
	rm -f "$1/pid"
	# a pid that is no longer the server's (reused) names no file of $WORK
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && ours "$pid" || return 0
	kill "$pid" 2>/dev/null
	wait_gone "$pid" 50 || kill -9 "$pid" 2>/dev/null
	wait_gone "$pid" 20
}

servers_stop_all() {
	local d
	for d in "$SERVERS_DIR"/*/; do
		[ -f "$d/pid" ] && server_stop "${d%/}"
	done
	return 0
}

# ---- delayproxy ---------------------------------------------------------

delayproxy_start() {
	[ $# -eq 3 ] || { echo "usage: delayproxy_start HOST:PORT LATENCY_MS BYTES_PER_SEC" >&2; return 2; }
	local dir pid
	dir=$(_srv_dir delayproxy)
	pid=$(_srv_spawn "$dir" "$TOP/bench/delayproxy" -L "$2" -b "$3" -p "$dir/port" "$1")
	_srv_port "$dir" "$pid" delayproxy || return 1
	DELAY_URL=http://127.0.0.1:$(cat "$dir/port")
	DELAY_PID=$pid
	DELAY_DIR=$dir
	DELAY_DESC=$(head -1 "$dir/log" | sed 's/^delayproxy: [^,]*, //')
	echo "$DELAY_URL"
}

# ---- memcached ----------------------------------------------------------

MEMCACHED_BIN=${MEMCACHED_BIN:-/usr/bin/memcached}

# tier_secret FILE: 32 random bytes in FILE, mode 0600: a shared_secret
tier_secret() {
	head -c 32 /dev/urandom >"$1" && chmod 600 "$1"
}

# tier_nodes_start DIR N MS: the servers of a shared-tier test of N nodes:
# N memcached servers on 127.0.0.2 on (MCS; LIST, their list), nginx
# serving DIR behind bench/delayproxy (MS ms before each first byte, 64
# MiB/s a connection: DELAY_URL) and a secret (SECRET).  A server that
# does not start is a check failed, and the test ends.
tier_nodes_start() {
	local a
	MCS=()
	for ((a = 2; a < $2 + 2; a++)); do
		memcached_start 127.0.0.$a >/dev/null || { fail "memcached $a"; finish; }
		MCS+=("$MC_SERVER")
	done
	LIST=$(IFS=,; echo "${MCS[*]}")
	nginx_start "$1" >/dev/null || { fail "nginx"; finish; }
	delayproxy_start "127.0.0.1:$NGINX_PORT" "$3" $((64 << 20)) >/dev/null ||
		{ fail "delayproxy"; finish; }
	SECRET=$WORK/secret
	tier_secret "$SECRET"
}

# _srv_free_port_on ADDR: a TCP port of ADDR nobody listens on right now
_srv_free_port_on() {
	python3 -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$1"
}

# mc_cmd ADDR:PORT COMMAND...: the server's answer (2 s at most)
mc_cmd() {
	python3 - "$@" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host.strip("[]"), int(port)), timeout=2)
s.sendall(b"".join(c.encode() + b"\r\n" for c in sys.argv[2:]))
buf = b""
try:
    while not (buf.endswith(b"END\r\n") or buf.endswith(b"OK\r\n") or
               buf.endswith(b"ERROR\r\n") or
               (buf.endswith(b"\r\n") and not buf.startswith((b"STAT", b"VALUE")))):
        d = s.recv(65536)
        if not d:
            break
        buf += d
except socket.timeout:
    pass
sys.stdout.write(buf.decode("latin-1"))
PY
}

# mc_set ADDR:PORT KEY FILE: a value stored as any client of memcached can
mc_set() {
	python3 - "$@" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
data = open(sys.argv[3], "rb").read()
s = socket.create_connection((host.strip("[]"), int(port)), timeout=2)
s.sendall(b"set %s 0 0 %d\r\n" % (sys.argv[2].encode(), len(data)) + data + b"\r\n")
ans = s.recv(100)
sys.exit(0 if ans.startswith(b"STORED") else 1)
PY
}

# _mc_spawn DIR ADDR PORT OPTS...: start memcached, wait until it answers
_mc_spawn() {
	local dir=$1 addr=$2 port=$3 pid user=()
	shift 3
	# memcached refuses to run as root unless told which user to be
	[ "$(id -u)" -eq 0 ] && user=(-u root)
	# (-P: memcached writes it only with -d, but it names $WORK on the
	# command line, which server_stop looks for)
	pid=$(_srv_spawn "$dir" "$MEMCACHED_BIN" -l "$addr" -p "$port" -U 0 \
		-m 64 -t 2 -c 1024 -P "$dir/memcached.pid" "${user[@]}" "$@")
	_SRV_T0=
	while _srv_until "$SRV_START_SECS"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "memcached in $dir exited; its log:"
			tail -20 "$dir/log"
			return 1
		fi
		if mc_cmd "$addr:$port" version 2>/dev/null | grep -q '^VERSION'; then
			MC_PID=$pid
			return 0
		fi
		sleep 0.05
	done
	echo "memcached in $dir does not answer at $addr:$port"
	server_stop "$dir"
	return 1
}

memcached_start() {
	[ $# -ge 1 ] || { echo "usage: memcached_start ADDR [OPTS...]" >&2; return 2; }
	local addr=$1 dir port try
	shift
	[ -x "$MEMCACHED_BIN" ] || { echo "memcached_start: $MEMCACHED_BIN missing (tests/deps.sh installs memcached)"; return 1; }
	dir=$(_srv_dir memcached)
	for try in 1 2 3; do
		port=$(_srv_free_port_on "$addr") || return 1
		echo "$addr $port $*" >"$dir/args"
		_mc_spawn "$dir" "$addr" "$port" "$@" >"$dir/start.log" && break
		grep -q 'Address already in use' "$dir/log" 2>/dev/null || { cat "$dir/start.log"; return 1; }
	done
	[ -n "${MC_PID:-}" ] && kill -0 "$MC_PID" 2>/dev/null || { cat "$dir/start.log"; return 1; }
	MC_SERVER=$addr:$port
	MC_DIR=$dir
	echo "$MC_SERVER"
}

memcached_restart() {
	local dir=$1 addr port opts
	read -r addr port opts <"$dir/args"
	server_stop "$dir"
	# shellcheck disable=SC2086
	_mc_spawn "$dir" "$addr" "$port" $opts
}

# ---- nginx --------------------------------------------------------------

NGINX_BIN=${NGINX_BIN:-/usr/sbin/nginx}

# _nginx_ca DIR: a private CA (once per test) and a server certificate
# for IP:127.0.0.1 and DNS:localhost in DIR (EC P-256: made in ms)
_nginx_ca() {
	local ca=$SERVERS_DIR/ca dir=$1
	if [ ! -f "$ca/ca.pem" ]; then
		mkdir -p "$ca"
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-keyout "$ca/ca.key" -out "$ca/ca.pem.tmp" -days 3 \
			-subj "/CN=prefetchfs test CA" \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign" 2>"$ca/openssl.log" &&
			mv "$ca/ca.pem.tmp" "$ca/ca.pem" || { cat "$ca/openssl.log"; return 1; }
	fi
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$dir/server.key" -out "$dir/server.csr" -subj "/CN=localhost" \
		2>"$dir/openssl.log" &&
	printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" \
		"basicConstraints=critical,CA:FALSE" \
		"keyUsage=critical,digitalSignature" \
		"extendedKeyUsage=serverAuth" >"$dir/server.ext" &&
	openssl x509 -req -in "$dir/server.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" \
		-CAcreateserial -days 3 -extfile "$dir/server.ext" \
		-out "$dir/server.pem" 2>>"$dir/openssl.log" ||
		{ cat "$dir/openssl.log"; return 1; }
}

# _nginx_conf DIR ROOT PORT FORMAT TLS: DIR/nginx.conf
_nginx_conf() {
	local dir=$1 root=$2 port=$3 format=$4 tls=$5 listen user=""
	listen="127.0.0.1:$port"
	[ "$tls" = 1 ] && listen="$listen ssl http2"
	[ "$tls" = h1 ] && listen="$listen ssl"
	# as root, workers would run as nobody, who cannot read $WORK (700)
	[ "$(id -u)" -eq 0 ] && user="user root;"
	cat >"$dir/nginx.conf" <<EOF
# made by tests/servers.sh
$user
daemon off;
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/error.log info;
events { worker_connections 1024; }
http {
	access_log $dir/access.log;
	client_body_temp_path $dir/tmp/body;
	proxy_temp_path $dir/tmp/proxy;
	fastcgi_temp_path $dir/tmp/fastcgi;
	uwsgi_temp_path $dir/tmp/uwsgi;
	scgi_temp_path $dir/tmp/scgi;
	types { }
	default_type application/octet-stream;
	sendfile on;
	keepalive_requests 100000;
	keepalive_timeout 300s;
	server {
		listen $listen;
		server_name localhost 127.0.0.1;
$([ "$tls" != 0 ] && printf '\t\tssl_certificate %s;\n\t\tssl_certificate_key %s;\n' "$dir/server.pem" "$dir/server.key")
		root $root;
		location / {
			autoindex on;
			autoindex_format $format;
			autoindex_exact_size on;
			autoindex_localtime off;
			etag on;
		}
	}
}
EOF
}

# data_gets: GETs of files (not of directory listings) in the access log of
# the nginx nginx_start started last
data_gets() {
	grep -c '"GET /[^ ]*[^/] HTTP' "$NGINX_DIR/access.log"
}

nginx_start() {
	local root="" format=html tls=0 dir port pid scheme try a
	for a in "$@"; do
		case $a in
		--json) format=json ;;
		--tls) tls=1 ;;
		--tls-http1) tls=h1 ;;	# https without HTTP/2, as S3 serves
		-*) echo "nginx_start: unknown option $a" >&2; return 2 ;;
		*) root=$(cd "$a" && pwd) || return 1 ;;
		esac
	done
	[ -n "$root" ] || { echo "usage: nginx_start ROOT [--json] [--tls|--tls-http1]" >&2; return 2; }
	[ -x "$NGINX_BIN" ] || { echo "nginx_start: $NGINX_BIN missing (tests/deps.sh installs nginx)"; return 1; }
	dir=$(_srv_dir nginx)
	mkdir -p "$dir/tmp"
	NGINX_CACERT=""
	scheme=http
	if [ "$tls" != 0 ]; then
		_nginx_ca "$dir" || return 1
		NGINX_CACERT=$SERVERS_DIR/ca/ca.pem
		scheme=https
	fi
	# the free port may be taken between the look-up and nginx's bind:
	# try another one
	for try in 1 2 3; do
		port=$(_srv_free_port)
		_nginx_conf "$dir" "$root" "$port" "$format" "$tls"
		# -e: the error log before the configuration is read, which
		# otherwise is /var/log/nginx/error.log; -p: no system prefix
		pid=$(_srv_spawn "$dir" "$NGINX_BIN" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf")
		NGINX_URL="$scheme://127.0.0.1:$port/"
		if _srv_wait "$dir" "$pid" "$NGINX_URL" ${NGINX_CACERT:+--cacert "$NGINX_CACERT"} >"$dir/wait.log"; then
			NGINX_PORT=$port
			NGINX_PID=$pid
			NGINX_DIR=$dir
			echo "$NGINX_URL"
			return 0
		fi
		grep -q 'Address already in use' "$dir/error.log" 2>/dev/null || break
		: >"$dir/error.log"
	done
	cat "$dir/wait.log"
	return 1
}

nginx_stop() { [ -n "${NGINX_DIR:-}" ] && server_stop "$NGINX_DIR"; }

# ---- S3 (s3rver) --------------------------------------------------------

S3_JS=$TOP/tests/s3

s3_start() {
	local dir pid port b args=()
	[ $# -eq 0 ] && set -- bkt
	"$S3_JS/install.sh" || { echo "s3_start: tests/s3/install.sh failed"; return 1; }
	for b in "$@"; do
		args+=(--bucket "$b")
	done
	dir=$(_srv_dir s3)
	mkdir -p "$dir/data"
	# (s3rver makes its continuation tokens with DES, which OpenSSL 3
	# has only in its legacy provider)
	pid=$(_srv_spawn "$dir" node --openssl-legacy-provider "$S3_JS/s3server.js" "$dir/data" "$dir/port" "${args[@]}" ${S3_LOG:+--log} ${S3_RAW:+--raw} ${S3_KEYS:+--keys "$S3_KEYS"})
	# the server picks its port and writes it once it listens
	_srv_port "$dir" "$pid" s3rver || return 1
	port=$(cat "$dir/port")
	_srv_wait "$dir" "$pid" "http://127.0.0.1:$port/" || return 1
	S3_PORT=$port
	S3_ENDPOINT=http://127.0.0.1:$port
	S3_PID=$pid
	S3_DIR=$dir
	S3_DATA=$dir/data
	S3_BUCKET=$1
	echo "$S3_ENDPOINT"
}

s3_stop() { [ -n "${S3_DIR:-}" ] && server_stop "$S3_DIR"; }

s3_curl() {
	curl -sS --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$S3_KEY:$S3_SECRET" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

s3_url() {
	local key=${2:-}
	key=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe="/-_.~"))' "$key")
	echo "$S3_ENDPOINT/$1/$key"
}

s3_put_tree() {
	[ $# -eq 3 ] || { echo "usage: s3_put_tree BUCKET PREFIX DIR" >&2; return 2; }
	[ -n "${S3_DATA:-}" ] || { echo "s3_put_tree: no S3 server (s3_start)" >&2; return 1; }
	node "$S3_JS/seed.js" "$S3_DATA" "$1" "$2" "$3" >"$S3_DIR/seed.log" 2>&1 ||
		{ echo "s3_put_tree $*: failed:"; cat "$S3_DIR/seed.log"; return 1; }
}

s3_replace() {
	[ $# -eq 3 ] || { echo "usage: s3_replace BUCKET KEY FILE" >&2; return 2; }
	local code
	code=$(s3_curl -o "$S3_DIR/replace.out" -w '%{http_code}' -T "$3" "$(s3_url "$1" "$2")") &&
		[ "$code" = 200 ] ||
		{ echo "s3_replace $*: HTTP $code"; cat "$S3_DIR/replace.out" 2>/dev/null; return 1; }
}

# ---- faultd (tests/helpers/faultd.py) -------------------------------------

faultd_start() {
	[ $# -ge 1 ] || { echo "usage: faultd_start ROOT [FAULTD-OPTS...]" >&2; return 2; }
	local root=$1 dir pid
	shift
	dir=$(_srv_dir faultd)
	pid=$(_srv_spawn "$dir" python3 "$TOP/tests/helpers/faultd.py" --port-file "$dir/port" \
		--log-file "$dir/requests.jsonl" "$@" "$root")
	_srv_port "$dir" "$pid" faultd || return 1
	FAULTD_PORT=$(cat "$dir/port")
	FAULTD_URL=http://127.0.0.1:$FAULTD_PORT
	FAULTD_PID=$pid
	FAULTD_DIR=$dir
	echo "$FAULTD_URL"
}

faultd_fault() { curl -sf "$1/_fault?$2" >/dev/null || fail "adding the rule $2"; }

faultd_reset() {
	curl -sf -X DELETE "$1/_fault" >/dev/null &&
		curl -sf -X DELETE "$1/_log" >/dev/null || fail "resetting faultd"
}

faultd_log() {
	curl -s "$1/_log" | python3 -c '
import json, sys
L = [json.loads(l) for l in sys.stdin if l.strip()]
H = lambda n: [e for e in L if e["method"] == "HEAD" and e["path"] == "/" + n]
G = lambda n: [e for e in L if e["method"] == "GET" and e["path"] == "/" + n]
print(eval(sys.argv[1]))' "$2"
}
