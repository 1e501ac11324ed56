#!/bin/bash
# A new user's mistakes, each answered by one line that says what is wrong
# and what to give instead (issue 31):
#   1. a mistyped option: "did you mean 'max_memory'?" (max_memroy,
#      cachedir), an option given GNU-style (--max_memory=1G)
#   2. SOURCE and MOUNTPOINT the other way round: an empty directory as
#      SOURCE over a full MOUNTPOINT, a URL as MOUNTPOINT
#   3. a URL naming a file, not a directory: over nginx, and an S3 key
#      naming an object, not a prefix
#   4. a cache_dir on a read-only filesystem (holding the listings of an
#      http:// source, which were said to be read before): one line
#   5. the man page in step with the docs: declared order, and the fill
#      as the read-ahead of random readers
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
need_fuse
need_tools

unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE \
	AWS_DEFAULT_PROFILE AWS_REGION AWS_DEFAULT_REGION AWS_ENDPOINT_URL \
	AWS_ENDPOINT_URL_S3 AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE
export HOME=$WORK/home-none
mkdir -p "$HOME"

SRC=$WORK/src
MNT=$WORK/mnt
mkdir -p "$SRC/train" "$MNT" "$WORK/empty"
mkfile "$SRC/train/a.bin" 100000
mkfile "$SRC/train/b.bin" 5000

# mistake WHAT NEEDLE ARGS...: prefetchfs ARGS fails, prints exactly one
# line "prefetchfs: ..." holding NEEDLE (a fixed string), and leaves no
# mount behind
mistake() {
	local what=$1 needle=$2 rc
	shift 2
	timeout 30 "$PF" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && one_line_err "$WORK/err" &&
		grep -qF -- "$needle" "$WORK/err" && [ ! -s "$WORK/out" ]; then
		ok "$what: $(cat "$WORK/err")"
	else
		fail "$what: exit $rc, expected one line with '$needle', got:"
		cat "$WORK/out" "$WORK/err"
	fi
	if mountpoint -q "$MNT"; then
		fail "$what: a mount was left on $MNT"
		fusermount3 -u "$MNT"
	fi
}

# ---- 1. option typos ----------------------------------------------------------
mistake "-o max_memroy=1G" "unknown option 'max_memroy': did you mean 'max_memory'?" \
	-o max_memroy=1G "$SRC" "$MNT"
mistake "-o cachedir=DIR" "did you mean 'cache_dir'?" \
	-o cachedir="$WORK/cache" "$SRC" "$MNT"
mistake "--max_memory=1G" "options go after -o (-o max_memory=1G)" \
	--max_memory=1G "$SRC" "$MNT"

# ---- 2. SOURCE and MOUNTPOINT the other way round -------------------------------
mistake "an empty SOURCE over a full MOUNTPOINT" "the other way round?" \
	"$WORK/empty" "$SRC"
check "... the dataset is left as it was" test -f "$SRC/train/a.bin"
nginx_start "$SRC" >/dev/null || { fail "nginx"; finish; }
mistake "a URL as MOUNTPOINT" "MOUNTPOINT is a URL (http://...): SOURCE comes first" \
	"$MNT" "$NGINX_URL"

# ---- 3. a URL naming a file ---------------------------------------------------------
mistake "an http:// URL of a file" \
	"'${NGINX_URL}train/a.bin' is a file (100000 bytes), not a directory: give the URL of the directory holding it (${NGINX_URL}train/)" \
	"${NGINX_URL}train/a.bin" "$MNT"
# a directory's URL without its final '/' still mounts
if pf_mount "${NGINX_URL}train" "$MNT" -o max_memory=64M; then
	check "an http:// directory without its final '/' mounts" cmp -s "$SRC/train/b.bin" "$MNT/b.bin"
	pf_umount "$MNT"
else
	fail "an http:// directory without its final '/' mounts"
fi
if s3_start data >/dev/null; then
	s3_put_tree data ds/ "$SRC"
	export AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET
	mistake "an s3:// key naming an object" \
		"'s3://data/ds/train/a.bin' is an object (100000 bytes), not a prefix: give the prefix holding it (s3://data/ds/train/)" \
		s3://data/ds/train/a.bin "$MNT" -o endpoint="$S3_ENDPOINT",region="$S3_REGION"
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
else
	fail "S3 server"
fi

# ---- 4. a read-only cache_dir -------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
	# a cache made by a first mount holds the source's listings
	if pf_mount "$NGINX_URL" "$MNT" -o cache_dir="$WORK/cache",max_memory=64M; then
		cat "$MNT/train/a.bin" >/dev/null
		pf_umount "$MNT"
	else
		fail "a mount with cache_dir"
	fi
	check "the cache holds the listings" quiet compgen -G "$WORK/cache/listings-*"
	mkdir -p "$WORK/ro"
	mount --bind -o ro "$WORK/cache" "$WORK/ro" && CLEANUP_HOOKS+=("umount '$WORK/ro'")
	mistake "a cache_dir on a read-only filesystem" \
		"cache_dir '$WORK/ro' is on a read-only filesystem" \
		-o cache_dir="$WORK/ro" "$NGINX_URL" "$MNT"
	check "... and no word of its listings having been read" \
		bash -c '! grep -q listings "$1"' _ "$WORK/err"
	mistake "a cache_dir in a missing directory" "$WORK/none does not exist" \
		-o cache_dir="$WORK/none/cache" "$SRC" "$MNT"
fi

# ---- 5. the man page ------------------------------------------------------------------
MAN=$TOP/mount/prefetchfs.man
check "prefetchfs(8) has a DECLARED ORDER section naming the plan file" \
	bash -c 'grep -q "^# DECLARED ORDER" "$1" && grep -q "prefetchfs/plan" "$1"' _ "$MAN"
check "prefetchfs(8) no longer says random readers get no read-ahead" \
	bash -c '! tr "\n" " " <"$1" | grep -qi "random readers get no read-ahead"' _ "$MAN"
check "prefetchfs(8): the fill is the read-ahead random readers get" \
	bash -c 'tr "\n" " " <"$1" | grep -q "the read-ahead random readers get"' _ "$MAN"
finish
