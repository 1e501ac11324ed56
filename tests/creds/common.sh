# The setup both AWS credential chain tests share (tests/mount_creds.sh,
# tests/mount_creds_sources.sh): source it after lib.sh, servers.sh and
# objlib.sh.  It clears the AWS_* environment and gives the test a HOME of
# its own, writes the dataset ($SRC: big.bin, 40 small files) to an s3rver
# bucket (s3://bkt/ds/, temporary keys from $KEYS accepted), starts the
# credential server tests/creds/credserver.py ($CS) and defines:
#   creds_start NAME [opts]      another credential server (CS_URL, CS_LOG)
#   ctl QUERY                    a control request to $CS
#   issued SRC / requests KIND   credentials handed out / requests seen
#   s3ok PREFIX                  S3 requests accepted with keys PREFIX*
#   secrets_file                 every secret known, one a line, in
#                                $WORK/secrets
#   read_checks TAG / no_leak TAG  byte-exact reads of $M / no secret
#                                anywhere the daemon writes
#   withenv VAR=VALUE... -- CMD  CMD with the VARs exported
#   mount_with TAG ERE VAR=VALUE...  mount $M with the VARs, check the
#                                source named in the log, read, no leak
#   done_with [ERE] / bad_with WHAT ERE VAR=VALUE...  unmount $M with a
#                                clean log / a mount that must fail
# NOIMDS (the variable that disables IMDS) and ARN (a role) for the tests.
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
