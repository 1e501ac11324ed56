#!/bin/bash
# AWS credentials renewed while reading, and their expiry, end to end
# against tests/creds/credserver.py (EC2 instance metadata, IMDSv2) and
# s3rver on 127.0.0.1 (setup: tests/creds/common.sh; the sources one by
# one: tests/mount_creds_sources.sh):
#  - renewal: keys that expire in 12 s (renewed 6 s before) are renewed
#    while a reader opens and reads files without a pause across their
#    expiry (no error, no open+read slower than 5 s), also when the
#    endpoint fails twice and then recovers;
#  - expiry: a source that keeps failing makes reads fail with EACCES after
#    expiry, with one log line naming the source, and they work again
#    once it recovers;
#  - a request refused (503) just before a renewal is retried after it
#    signed with the new key;
#  - no secret in the daemon log, /proc/mounts, the stats file or the
#    trace of the renewing mount.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
. "$(dirname "$0")/objlib.sh"
need_fuse
need_tools "$MKDATA"

. "$(dirname "$0")/creds/common.sh"

# ---- renewal while reading --------------------------------------------
# Keys live 12 s and are renewed 6 s before they expire (PF_CREDS_MARGIN_S,
# half their life: the most the daemon allows), so a renewal comes every
# 6 s.  Each phase reads until what it checks has happened (a key expired
# while the reader went on, a failed renewal recovered, ...), polled with a
# deadline, rather than for a fixed time.

# reader STOPFILE: opens (a HEAD each) and reads the small files of $M in
# turn, byte-exact, until STOPFILE exists (90 s at most); prints
# "secs=S reads=N errors=E max_ms=T ..."
reader() {
	python3 -c '
import os, sys, time
src, mnt, stop = sys.argv[1], sys.argv[2], sys.argv[3]
names = sorted(os.listdir(src))
want = {n: open(os.path.join(src, n), "rb").read() for n in names}
t_start = time.time()
t_end = t_start + 90
n = errors = 0
worst = 0.0
first = ""
while time.time() < t_end and not os.path.exists(stop):
    name = names[n % len(names)]
    t0 = time.time()
    try:
        fd = os.open(os.path.join(mnt, name), os.O_RDONLY)
        try:
            got = os.pread(fd, len(want[name]) + 1, 0)
        finally:
            os.close(fd)
        if got != want[name]:
            errors += 1
            first = first or "differs: " + name
    except OSError as e:
        errors += 1
        first = first or "%s: %s" % (name, e)
    worst = max(worst, time.time() - t0)
    n += 1
    time.sleep(0.02)
print("secs=%d reads=%d errors=%d max_ms=%d %s" % (time.time() - t_start, n,
      errors, worst * 1000, first))
' "$SRC/small" "$M/small" "$1"
}

# keys_minted: how many instance keys the credential server minted;
# key_exp: the expiry (epoch seconds) of the newest key it minted;
# keys_accepted: how many of the keys minted since the renew mount the S3
# server accepted
keys_minted() { grep -ac '"ak": "ASIAIMDS' "$KEYS"; }
key_exp() { tail -n 1 "$KEYS" | sed -n 's/.*"exp": \([0-9]*\).*/\1/p'; }
keys_accepted() {
	grep -ao 'cred ASIAIMDS[0-9]* ok' "$S3_DIR/log" | cut -d' ' -f2 | sort -u >"$WORK/accepted"
	tail -n +$((KEYS0 + 1)) "$KEYS" | grep -o 'ASIAIMDS[0-9]*' | sort -u |
		comm -12 - "$WORK/accepted" | wc -l
}
now_past() { [ "$(date +%s)" -ge "$1" ]; }
# wait_until SECS CMD...: CMD (polled every 0.2 s) holds within SECS s
wait_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}
# read_while TAG SECS CMD...: the reader runs on $M until CMD holds (SECS
# at most, else a check fails); its summary line in $out
read_while() {
	local tag=$1 secs=$2 rp
	shift 2
	rm -f "$WORK/stop"
	guard "$M" 120 reader "$WORK/stop" >"$WORK/reader.out" &
	rp=$!
	wait_until "$secs" "$@" ||
		fail "[$tag] not within $secs s of reads: $*"
	touch "$WORK/stop"
	wait "$rp"
	out=$(cat "$WORK/reader.out")
	echo "  $out"
}
# three_keys EXP: EXP (the first key's expiry) has passed and the S3 server
# accepted three keys; renewed_past N EXP: more than N keys were minted and
# EXP (the old keys' expiry) has passed
three_keys() { now_past "$1" && [ "$(keys_accepted)" -ge 3 ]; }
renewed_past() { [ "$(keys_minted)" -gt "$1" ] && now_past "$2"; }
# expired: the newest keys expired (read again at each poll: a renewal may
# have been under way when the endpoint began to fail)
expired() { now_past "$(key_exp)"; }

# revalidate=0: every open makes a HEAD, signed with the keys of the moment
ctl ttl=12
i0=$(issued imds)
KEYS0=$(wc -l <"$KEYS")
MORE_OPTS=,revalidate=0
if mount_with renew 'EC2 instance metadata \(IMDSv2' AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS" PF_CREDS_MARGIN_S=6; then
	# reads across the first keys' expiry, until the third keys served them
	read_while renew 60 three_keys "$(key_exp)"
	check "[renew] opens and reads across two renewals and an expiry: no error" bash -c '[[ "$1" == *" errors=0 "* ]]' _ "$out "
	ms=$(sed -n 's/.*max_ms=\([0-9]*\).*/\1/p' <<<"$out")
	check "[renew] no open+read stalled over 5 s (slowest ${ms:-?} ms)" test "${ms:-99999}" -lt 5000
	n=$(( $(issued imds) - i0 ))
	check "[renew] renewed in the background ($n fetches, 12 s lifetime, 6 s margin)" test "$n" -ge 3
	check "[renew] the log says they were renewed" grep -q 'AWS credentials from EC2 instance metadata .* renewed' "$WORK/daemon.mnt-renew.log"
	check "[renew] the S3 server accepted several successive key pairs ($(keys_accepted))" \
		test "$(keys_accepted)" -ge 3
	# a failing endpoint that recovers: two 500s, then fine (the retries
	# after 1 and 2 s end 3 s before the old keys expire); reads until the
	# new keys came and the old ones expired
	k=$(keys_minted)
	exp=$(key_exp)
	ctl fail=2
	read_while renew 60 renewed_past "$k" "$exp"
	check "[renew] the endpoint failed twice then recovered: no read error" bash -c '[[ "$1" == *" errors=0 "* ]]' _ "$out "
	check "[renew] the failed renewals were logged with their retry" \
		grep -q 'renewing the AWS credentials from EC2 instance metadata .* failed (EC2 instance metadata answered HTTP 500): retrying in' "$WORK/daemon.mnt-renew.log"
	# a failing endpoint that does not recover in time: EACCES once the
	# keys expired
	ctl fail=1000
	wait_until 30 expired || fail "[renew] the keys did not expire"
	errno_checks expired <<'EOF'
EACCES open after the credentials expired	open(m + "/small/f07", "rb").read()
EACCES open of another file	open(m + "/small/f08", "rb").read()
EOF
	check "[renew] one log line says they expired, naming the source" \
		test "$(grep -c 'AWS credentials from EC2 instance metadata .* expired at .* could not be renewed' "$WORK/daemon.mnt-renew.log")" -eq 1
	ctl fail=0
	back=0
	t=$SECONDS
	for i in $(seq 140); do
		if guard "$M" 20 cmp -s "$SRC/small/f11" "$M/small/f11"; then back=1; break; fi
		sleep 0.5
	done
	check "[renew] reads work again once the endpoint recovers (after $((SECONDS - t)) s)" test $back -eq 1
	done_with 'renewing the AWS credentials .* failed|expired at .* could not be renewed|Permission denied|EACCES'
fi
MORE_OPTS=
ctl ttl=3600

# ---- a retry after a renewal is signed with the new credentials ---------
# An S3 proxy answers the first HEAD of small/f33 with 503 and a
# Retry-After that brings its retry 4 s after the renewal of the keys it
# was signed with (12 s lifetime, renewed 6 s before expiry, within a
# second after that): the retry must carry the new key.  The HEAD goes at
# least 3 s before that renewal (else it waits for the next keys).
# revalidate=0: the open makes that HEAD even though the listing gave the
# version.
creds_start proxy --proxy "$S3_ENDPOINT" || fail "S3 proxy"
PROXY=$CS_URL PROXY_LOG=$CS_LOG
ctl ttl=12
M=$WORK/mnt-retry
if withenv AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS" PF_CREDS_MARGIN_S=6 -- \
	pf_mount_ready s3://bkt/ds/ "$M" -o endpoint="$PROXY",revalidate=0; then
	# (minted: key_exp - 12)
	if [ $(( $(date +%s) - $(key_exp) + 12 )) -gt 3 ]; then
		k=$(keys_minted)
		wait_until 30 eval '[ "$(keys_minted)" -gt $k ]' || fail "[retry] no renewal"
	fi
	hold_s=$(( $(key_exp) - 12 + 10 - $(date +%s) ))
	curl -sf -X POST "$PROXY/_ctl?hold=small%2Ff33&hold_s=$hold_s" >/dev/null || fail "proxy control"
	rc_check "[retry] small/f33 byte-exact through a HEAD held $hold_s s and retried" cmp "$SRC/small/f33" "$M/small/f33"
	grep -a ' /bkt/ds/small/f33 ' "$PROXY_LOG" | head -3 | sed 's/^/  /'
	first=$(grep -a '^proxy HEAD /bkt/ds/small/f33 .* 503$' "$PROXY_LOG" | head -1 | cut -d' ' -f4)
	second=$(grep -a '^proxy HEAD /bkt/ds/small/f33 .* 200$' "$PROXY_LOG" | head -1 | cut -d' ' -f4)
	check "[retry] the held HEAD was signed with the first key ($first)" test -n "$first"
	check "[retry] its retry after the renewal was signed with the new key ($second)" \
		bash -c '[ -n "$2" ] && [ "$1" != "$2" ]' _ "$first" "$second"
	done_with 'retrying'
fi
ctl ttl=3600

finish
