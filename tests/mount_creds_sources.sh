#!/bin/bash
# The AWS credential chain end to end, every source and its failures:
# tests/creds/credserver.py on 127.0.0.1 speaks the EC2 instance metadata
# (IMDSv2 and v1), container, STS (AssumeRoleWithWebIdentity, SigV4-checked
# AssumeRole) and SSO protocols and hands out temporary keys that s3rver
# (tests/s3/s3server.js --keys) accepts with their session token (setup:
# tests/creds/common.sh).  For each source a mount reads byte-exact and its
# log names the source; then:
#  - IMDSv1-only, IMDS disabled, bad JSON / bad XML from each endpoint:
#    one clear line, no crash;
#  - a signed request redirected to another port is not followed: the
#    other port never sees the session token;
#  - no secret (keys, session tokens, the web identity, container and SSO
#    tokens) in the daemon logs, /proc/mounts, the stats file or the trace.
# Nothing here is timed (keys live an hour); renewal and expiry, which
# are, are tests/mount_creds.sh.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
. "$(dirname "$0")/objlib.sh"
need_fuse
need_tools "$MKDATA"

. "$(dirname "$0")/creds/common.sh"

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
