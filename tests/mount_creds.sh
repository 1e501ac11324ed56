#!/bin/bash
# The AWS credential chain end to end: tests/creds/credserver.py on
# 127.0.0.1 speaks the EC2 instance metadata (IMDSv2 and v1), container,
# STS (AssumeRoleWithWebIdentity, SigV4-checked AssumeRole) and SSO
# protocols and hands out temporary keys that s3rver (tests/s3/s3server.js
# --keys) accepts with their session token until they expire.  For each
# source a mount reads byte-exact and its log names the source; then:
#  - renewal: keys that expire in 12 s (renewed 6 s before) are renewed
#    while a reader opens and reads files without a pause across their
#    expiry (no error, no open+read slower than 5 s), also when the
#    endpoint fails twice and then recovers;
#  - expiry: a source that keeps failing makes reads fail with EACCES after
#    expiry, with one log line naming the source, and they work again
#    once it recovers;
#  - IMDSv1-only, IMDS disabled, bad JSON / bad XML from each endpoint:
#    one clear line, no crash;
#  - a request refused (503) just before a renewal is retried after it
#    signed with the new key;
#  - a signed request redirected to another port is not followed: the
#    other port never sees the session token;
#  - no secret (keys, session tokens, the web identity, container and SSO
#    tokens) in the daemon logs, /proc/mounts, the stats file or the trace.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
. "$(dirname "$0")/objlib.sh"
need_fuse
need_tools "$MKDATA"

for v in $(env | sed -n 's/^\(AWS_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export HOME=$WORK/home
mkdir -p "$HOME/.aws"

MiB=1048576
SRC=$WORK/src
mkdir -p "$SRC/small"
"$MKDATA" --seed 21 "$WORK/gen" 1 9M >/dev/null 2>&1 || fail "bench/mkdata"
mv "$WORK/gen/file-000000.bin" "$SRC/big.bin"
truncate -s $((8 * MiB + 777)) "$SRC/big.bin"
for i in $(seq -w 0 39); do
	head -c $((20000 + 10#$i * 97)) /dev/urandom >"$SRC/small/f$i"
done

KEYS=$WORK/keys.jsonl
: >"$KEYS"
S3_KEYS=$KEYS S3_LOG=1 s3_start bkt >/dev/null || { fail "s3 server"; finish; }
s3_put_tree bkt ds/ "$SRC" || { fail "s3_put_tree"; finish; }

# creds_start NAME [credserver options]: a credential server; sets CS_URL
# and CS_LOG
creds_start() {
	local name=$1 dir pid i
	shift
	dir=$(_srv_dir "creds-$name")
	pid=$(_srv_spawn "$dir" python3 "$TOP/tests/creds/credserver.py" "$dir/port" "$KEYS" --log "$dir/requests" "$@")
	for ((i = 0; i < 200; i++)); do
		[ -s "$dir/port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	[ -s "$dir/port" ] || { echo "credserver did not start:"; cat "$dir/log"; return 1; }
	CS_URL=http://127.0.0.1:$(cat "$dir/port")
	CS_LOG=$dir/requests
	CS_DIR=$dir
}

printf 'eyJhbGciOiJSUzI1NiJ9.webidentity-SECRET-jwt.sig\n' >"$WORK/webid"
CTOKEN=ctr-SECRET-authz-0123456789
SSOTOKEN=sso-SECRET-bearer-abcdef
creds_start main --ctoken "$CTOKEN" --webid-file "$WORK/webid" --sso-token "$SSOTOKEN" ||
	{ fail "credential server"; finish; }
CS=$CS_URL
ok "s3rver at $S3_ENDPOINT, credential endpoints at $CS"
ctl() { curl -sf -X POST "$CS/_ctl?$1" >/dev/null || fail "credserver control $1"; }
# issued SRC: how many credentials the server handed out for SRC
issued() { curl -s "$CS/_stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["issued"].get(sys.argv[1], 0))' "$1"; }
requests() { curl -s "$CS/_stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"].get(sys.argv[1], 0))' "$1"; }
# s3ok PREFIX: requests the S3 server accepted with keys starting PREFIX
s3ok() { grep -ac "cred $1[0-9A-Z]* ok" "$S3_DIR/log"; }

# A static key pair for AssumeRole's source profile (no token, no expiry)
echo '{"ak": "AKIASRCSTATIC", "sk": "srcStatic-SECRET-key", "token": "", "exp": 0}' >>"$KEYS"

# every secret the test knows of, for the leak checks
secrets_file() {
	python3 - "$KEYS" >"$WORK/secrets" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.strip():
        k = json.loads(line)
        print(k["sk"])
        if k["token"]:
            print(k["token"])
PY
	{ echo "webidentity-SECRET-jwt"; echo "$CTOKEN"; echo "$SSOTOKEN"; } >>"$WORK/secrets"
}

# read_checks TAG: byte-exact reads of big.bin and of every small file
read_checks() {
	rc_check "[$1] big.bin byte-exact (cmp)" cmp "$SRC/big.bin" "$M/big.bin"
	rc_check "[$1] the 40 small files byte-exact" diff -r "$SRC/small" "$M/small"
}

# no_leak TAG: no secret in the log, /proc/mounts, stats, trace
no_leak() {
	local log="$WORK/daemon.$(basename "$M").log" f
	secrets_file
	for f in "$log" /proc/mounts "$M/.prefetchfs/stats" "$WORK/trace.$1"; do
		[ -e "$f" ] || continue
		if grep -aqF -f "$WORK/secrets" "$f" 2>/dev/null; then
			fail "[$1] a secret appears in $f"
		else
			ok "[$1] no secret in $f"
		fi
	done
}

# withenv VAR=VALUE... -- CMD...: CMD in this shell with VARs exported,
# unset again after it
withenv() {
	local vars=() rc v
	while [ "$1" != "--" ]; do
		vars+=("${1%%=*}")
		export "$1"
		shift
	done
	shift
	"$@"
	rc=$?
	for v in "${vars[@]}"; do unset "$v"; done
	return $rc
}

# mount_with TAG LOG-ERE VAR=VALUE...: mount s3://bkt/ds/ on $WORK/mnt-TAG
# with the VARs set (and a trace, and the options in $MORE_OPTS), check
# that the log names the source (LOG-ERE), read byte-exact, check for
# leaks.  Leaves it mounted ($M).
mount_with() {
	local tag=$1 re=$2
	shift 2
	M=$WORK/mnt-$tag
	if ! withenv "$@" -- pf_mount_ready s3://bkt/ds/ "$M" -o endpoint="$S3_ENDPOINT${MORE_OPTS:-}" \
		-o trace="$WORK/trace.$tag"; then
		fail "[$tag] mount"
		return 1
	fi
	ok "[$tag] mounted"
	check "[$tag] the log names the source: /$re/" grep -qE -- "$re" "$WORK/daemon.$(basename "$M").log"
	read_checks "$tag"
	no_leak "$tag"
	return 0
}

# done_with [EXPECTED-ERE]: unmount $M, its log clean (but those lines)
done_with() {
	clean_log "$M" "${1:-}"
	pf_umount "$M" || fail "unmount $M"
}

# bad_with WHAT ERE VAR=VALUE...: the mount fails in under 15 s with one
# line matching ERE, and no secret in it
bad_with() {
	local what=$1 re=$2
	shift 2
	withenv "$@" -- bad_mount "$what" "$re" 15 s3://bkt/ds/ -o endpoint="$S3_ENDPOINT"
	secrets_file
	if grep -aqF -f "$WORK/secrets" "$WORK/bad.err" 2>/dev/null; then
		fail "$what: the message shows a secret"
	fi
}

NOIMDS=AWS_EC2_METADATA_DISABLED=true
ARN=arn:aws:iam::123456789012:role/reader
secrets_file

# ---- 5. EC2 instance metadata -------------------------------------------
if mount_with imdsv2 'credentials=EC2 instance metadata \(IMDSv2 at http://127\.0\.0\.1:[0-9]+, role test-role\)' \
	AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS"; then
	check "[imdsv2] the S3 server accepted the instance keys ($(s3ok ASIAIMDS) requests)" test "$(s3ok ASIAIMDS)" -gt 0
	check "[imdsv2] a session token was asked for (PUT /latest/api/token with the TTL header)" \
		grep -q '^PUT /latest/api/token .*x-aws-ec2-metadata-token-ttl-seconds' "$CS_LOG"
	done_with
fi
ctl imds=v1only
if mount_with imdsv1 'EC2 instance metadata \(IMDSv1 at' AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS"; then
	done_with
fi
ctl imds=v2
before=$(requests imds-token)
bad_with "IMDS disabled, no other source" 'no AWS credentials: tried environment.*disabled by AWS_EC2_METADATA_DISABLED' \
	AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS" AWS_EC2_METADATA_DISABLED=true
check "IMDS disabled: the endpoint was not asked" test "$(requests imds-token)" -eq "$before"
ctl bad=1
bad_with "IMDS answers bad JSON" 'bad answer from EC2 instance metadata: not JSON' AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS"
bad_with "no IMDS at all" 'no AWS credentials: .*EC2 instance metadata at http://127.0.0.1:1' \
	AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:1

# ---- 4. container credentials --------------------------------------------
if mount_with container 'container credentials \(http://127\.0\.0\.1:[0-9]+/container/creds, from AWS_CONTAINER_CREDENTIALS_FULL_URI\)' \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="$CS/container/creds" AWS_CONTAINER_AUTHORIZATION_TOKEN="$CTOKEN" \
	AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:1; then
	check "[container] the S3 server accepted the task keys" test "$(s3ok ASIACTR)" -gt 0
	done_with
fi
printf '%s\n' "$CTOKEN" >"$WORK/ctoken"
if mount_with ctrfile 'container credentials' AWS_CONTAINER_CREDENTIALS_FULL_URI="$CS/container/creds" \
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$WORK/ctoken" AWS_CONTAINER_AUTHORIZATION_TOKEN=wrong $NOIMDS; then
	done_with
fi
bad_with "container: a wrong authorization token" 'container credentials endpoint answered HTTP 401' \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="$CS/container/creds" AWS_CONTAINER_AUTHORIZATION_TOKEN=wrong-token $NOIMDS
ctl bad=1
bad_with "container: bad JSON" 'bad answer from the container credentials endpoint: not JSON' \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="$CS/container/creds" AWS_CONTAINER_AUTHORIZATION_TOKEN="$CTOKEN" $NOIMDS
bad_with "container: plain http to a remote host is refused" 'must be https' \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="http://example.com/creds" $NOIMDS

# ---- 2. web identity ----------------------------------------------------
if mount_with webid "web identity \(role $ARN, token file $WORK/webid" \
	AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/webid" AWS_ROLE_ARN="$ARN" AWS_ENDPOINT_URL_STS="$CS" $NOIMDS; then
	check "[webid] the S3 server accepted the role's keys" test "$(s3ok ASIAWEBID)" -gt 0
	done_with
fi
# web identity comes before the shared files and the container
printf '[default]\naws_access_key_id = AKIASRCSTATIC\naws_secret_access_key = srcStatic-SECRET-key\n' >"$HOME/.aws/credentials"
if mount_with webidfirst "web identity" AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/webid" AWS_ROLE_ARN="$ARN" \
	AWS_ENDPOINT_URL_STS="$CS" AWS_CONTAINER_CREDENTIALS_FULL_URI="$CS/container/creds" $NOIMDS; then
	done_with
fi
rm -f "$HOME/.aws/credentials"
printf 'not-the-token\n' >"$WORK/webid-bad"
bad_with "web identity: STS refuses the token" 'STS at http://127.0.0.1:[0-9]+/ refused arn:aws:iam::123456789012:role/reader: HTTP 403, InvalidIdentityToken' \
	AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/webid-bad" AWS_ROLE_ARN="$ARN" AWS_ENDPOINT_URL_STS="$CS" $NOIMDS
ctl bad=1
bad_with "web identity: bad XML from STS" 'bad answer from STS .*not XML' \
	AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/webid" AWS_ROLE_ARN="$ARN" AWS_ENDPOINT_URL_STS="$CS" $NOIMDS
bad_with "web identity without AWS_ROLE_ARN" 'AWS_ROLE_ARN is not' AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/webid" $NOIMDS

# ---- 3. shared files: credential_process, AssumeRole, SSO ----------------
printf '#!/bin/sh\nexec curl -sf "%s/process/creds"\n' "$CS" >"$WORK/proc.sh"
printf '#!/bin/sh\necho %s\n' "'{\"Version\": 1, \"AccessKeyId\": \"AKIA'" >"$WORK/badproc.sh"
chmod +x "$WORK/proc.sh" "$WORK/badproc.sh"
mkdir -p "$HOME/.aws/sso/cache"
exp=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
printf '{"startUrl": "https://example.awsapps.com/start", "region": "us-east-1",\n "accessToken": "%s", "expiresAt": "%s"}\n' \
	"$SSOTOKEN" "$exp" >"$HOME/.aws/sso/cache/0123abcd.json"
printf '[static-src]\naws_access_key_id = AKIASRCSTATIC\naws_secret_access_key = srcStatic-SECRET-key\n' >"$HOME/.aws/credentials"
{
	printf '[profile proc]\ncredential_process = %s\n' "$WORK/proc.sh"
	printf '[profile badproc]\ncredential_process = %s\n' "$WORK/badproc.sh"
	printf '[profile role]\nrole_arn = %s\nsource_profile = static-src\n' "$ARN"
	printf '[profile chained]\nrole_arn = arn:aws:iam::123456789012:role/second\nsource_profile = proc\n'
	printf '[profile sso]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = ReadS3\n'
	printf '[profile ssonone]\nsso_start_url = https://other.awsapps.com/start\nsso_region = us-east-1\n'
	printf 'sso_account_id = 123456789012\nsso_role_name = ReadS3\n'
	printf '[sso-session corp]\nsso_start_url = https://example.awsapps.com/start\nsso_region = us-east-1\n'
} >"$HOME/.aws/config"

if mount_with process 'credential_process of profile proc in' AWS_PROFILE=proc $NOIMDS; then
	check "[process] the S3 server accepted the process's keys" test "$(s3ok ASIAPROC)" -gt 0
	done_with
fi
bad_with "credential_process prints bad JSON" "bad output of the credential_process of profile 'badproc': not JSON" AWS_PROFILE=badproc $NOIMDS
if mount_with role "role $ARN of profile role in .*AssumeRole with keys of profile static-src" \
	AWS_PROFILE=role AWS_ENDPOINT_URL_STS="$CS" $NOIMDS; then
	check "[role] the S3 server accepted the assumed role's keys" test "$(s3ok ASIAROLE)" -gt 0
	check "[role] STS checked the SigV4 signature of AssumeRole (no refusal logged)" bash -c '! grep -q sts-refused "$1"' _ "$CS_LOG"
	done_with
fi
# the source credentials are themselves temporary: their token must be
# sent (and signed) to STS
if mount_with chained "role arn:aws:iam::123456789012:role/second of profile chained .*credential_process of profile proc" \
	AWS_PROFILE=chained AWS_ENDPOINT_URL_STS="$CS" $NOIMDS; then
	check "[chained] STS accepted the signature with a session token" bash -c '! grep -q sts-refused "$1"' _ "$CS_LOG"
	done_with
fi
printf '[bad-src]\naws_access_key_id = AKIASRCSTATIC\naws_secret_access_key = wrong-secret\n' >>"$HOME/.aws/credentials"
printf '[profile badrole]\nrole_arn = %s\nsource_profile = bad-src\n' "$ARN" >>"$HOME/.aws/config"
bad_with "AssumeRole signed with a wrong secret" 'refused .*SignatureDoesNotMatch' AWS_PROFILE=badrole AWS_ENDPOINT_URL_STS="$CS" $NOIMDS
if mount_with sso "SSO \(role ReadS3 of account 123456789012, profile sso in" \
	AWS_PROFILE=sso AWS_ENDPOINT_URL_SSO="$CS" $NOIMDS; then
	check "[sso] the S3 server accepted the SSO role's keys" test "$(s3ok ASIASSO)" -gt 0
	done_with
fi
bad_with "SSO without a cached token" 'run `aws sso login --profile ssonone`' AWS_PROFILE=ssonone AWS_ENDPOINT_URL_SSO="$CS" $NOIMDS
ctl bad=1
bad_with "SSO: bad JSON" 'bad answer from the SSO portal' AWS_PROFILE=sso AWS_ENDPOINT_URL_SSO="$CS" $NOIMDS
rm -f "$HOME/.aws/config" "$HOME/.aws/credentials"

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

# ---- redirects keep the token --------------------------------------------
creds_start other || fail "second credential server"
OTHER=$CS_URL OTHER_LOG=$CS_LOG
creds_start redir || fail "third credential server"
REDIR=$CS_URL REDIR_LOG=$CS_LOG
curl -sf -X POST "$REDIR/_ctl?redirect=$OTHER" >/dev/null || fail "redirect control"
withenv AWS_ACCESS_KEY_ID=AKIAREDIR AWS_SECRET_ACCESS_KEY=redir-SECRET AWS_SESSION_TOKEN=redir-SECRET-token -- \
	bad_mount "a signed S3 request redirected to another port" 'redirect, not followed' 15 s3://bkt/ds/ -o endpoint="$REDIR"
check "redirect: the redirecting server got the signed request with its token" grep -q 'x-amz-security-token=PRESENT' "$REDIR_LOG"
check "redirect: the other port got no request at all" bash -c '! [ -s "$1" ]' _ "$OTHER_LOG"

finish
