#!/bin/bash
# The HTTP(S) backend against a real nginx (tests/servers.sh):
#  - the listing equals the source tree, from the HTML autoindex and from
#    the JSON one: names with spaces, UTF-8, '&', '%', '#', '+', quotes,
#    a name that looks percent-encoded, a deep directory, an empty file, an
#    empty directory; sizes too;
#  - byte-exact reads: sequential whole files, strided ranks, random
#    preads, mmap, 8 readers at once;
#  - the stats: a sequential reader's stream is "sequential", the bytes
#    fetched cover the file;
#  - HTTPS: with -o cacert the reads are byte-exact; without it the mount
#    fails with one line and a non-zero exit;
#  - -o manifest=URL shows exactly the files of the manifest;
#  - a missing name is ENOENT, every change EROFS;
#  - a file replaced (same size) while open: EIO, never new bytes; a new
#    open reads the new version;
#  - an unreachable server and a prefix nginx answers 404 for fail the
#    mount with one clear line, quickly.
# The happy-path daemons run in the foreground (-f) so that their log can
# be checked: no "failed", "error" or warning line may appear in it.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
. "$(dirname "$0")/objlib.sh"
need_fuse
need_tools "$HELPERS/randread" "$HELPERS/mmapread" "$TRAINER" "$MKDATA"

MiB=1048576
SRC=$WORK/src
mkdir -p "$SRC"

# ---- the source tree --------------------------------------------------------
# big.bin: 32 MiB + 12345 bytes (the last block partial); seq/: 8 files of
# 8 MiB for the concurrent readers; stats.bin: 32 MiB read only once, by
# the sequential reader whose stats are checked
"$MKDATA" --seed 3 "$WORK/gen" 1 33M >/dev/null 2>&1 || fail "bench/mkdata"
mv "$WORK/gen/file-000000.bin" "$SRC/big.bin"
truncate -s $((32 * MiB + 12345)) "$SRC/big.bin"
"$MKDATA" --seed 4 "$SRC/seq" 8 8M >/dev/null 2>&1 || fail "bench/mkdata"
"$MKDATA" --seed 5 "$WORK/gen" 1 32M >/dev/null 2>&1 || fail "bench/mkdata"
mv "$WORK/gen/file-000000.bin" "$SRC/stats.bin"
# names the URL and the index must escape
mkdir -p "$SRC/odd names"
odd=("name with  spaces.txt" "ünïcödé-日本語-ñ.txt" "a&b&amp;c.txt" "100%.txt"
	"50%25 literal.txt" "x#y.txt" "a+b c+.txt" "it's \"quoted\".txt"
	"what?.txt" "semi;colon=eq.txt" "<angle>.txt")
for n in "${odd[@]}"; do
	printf '%s\n' "content of $n" >"$SRC/odd names/$n"
done
mkfile "$SRC/odd names/bin #1 & more.bin" 300000
deep=$SRC
for i in $(seq -w 1 12); do deep="$deep/level $i"; done
mkdir -p "$deep"
printf 'at the bottom\n' >"$deep/leaf & end.txt"
: >"$SRC/empty"
mkdir -p "$SRC/empty dir"
mkdir -p "$SRC/dir+plus/sub%dir#"
printf 'nested\n' >"$SRC/dir+plus/sub%dir#/f&g.txt"

tree_of "$SRC" >"$WORK/tree.src"

# ---- helpers --------------------------------------------------------------

# same_tree TAG MNT: find over MNT lists what find over $SRC does, and
# every small file reads back byte-exact
same_tree() {
	local tag=$1 mnt=$2 f bad=0
	g tree_of "$mnt" >"$WORK/tree.$tag"
	if diff "$WORK/tree.src" "$WORK/tree.$tag" >"$WORK/tree.$tag.diff"; then
		ok "[$tag] listing (names, types, sizes) equals the source tree ($(wc -l <"$WORK/tree.src") entries)"
	else
		fail "[$tag] listing differs from the source tree (< source, > mount):"
		head -30 "$WORK/tree.$tag.diff"
	fi
	for f in "${odd[@]}" "bin #1 & more.bin"; do
		g cmp -s "$SRC/odd names/$f" "$mnt/odd names/$f" || {
			bad=$((bad + 1))
			echo "  differs: odd names/$f"
		}
	done
	g cmp -s "$deep/leaf & end.txt" "$mnt/${deep#"$SRC"/}/leaf & end.txt" || {
		bad=$((bad + 1))
		echo "  differs: the deep leaf"
	}
	g cmp -s "$SRC/dir+plus/sub%dir#/f&g.txt" "$mnt/dir+plus/sub%dir#/f&g.txt" || {
		bad=$((bad + 1))
		echo "  differs: dir+plus/sub%dir#/f&g.txt"
	}
	check "[$tag] files with odd names read byte-exact" test $bad -eq 0
	check "[$tag] the empty file reads empty" \
		bash -c '[ -f "$1/empty" ] && [ ! -s "$1/empty" ] && [ -z "$(cat "$1/empty")" ]' _ "$mnt"
	check "[$tag] the empty directory is an empty directory" \
		bash -c '[ -d "$1/empty dir" ] && [ -z "$(ls -A "$1/empty dir")" ]' _ "$mnt"
}

# 8 readers at once: the 8 files of seq/, each whole
eight_readers() {
	local mnt=$1 i pids=()
	for i in 0 1 2 3 4 5 6 7; do
		( cmp "$SRC/seq/file-00000$i.bin" "$mnt/seq/file-00000$i.bin" >"$WORK/conc.$i" 2>&1
		  echo "rc=$?" >>"$WORK/conc.$i" ) &
		pids+=($!)
	done
	wait "${pids[@]}"
}

# all_reads TAG MNT: byte-exact reads of every kind
all_reads() {
	local tag=$1 mnt=$2 spec r n l i bad=0
	drop "$mnt/big.bin"
	rc_check "[$tag] sequential cat of big.bin byte-exact (cmp)" cmp "$SRC/big.bin" "$mnt/big.bin"
	if [ "$tag" = html ]; then
		drop "$mnt/big.bin"
		rc_check "[$tag] sequential dd bs=4k byte-exact (sha256)" \
			bash -c '[ "$(dd if="$1" bs=4k status=none | sha256sum)" = "$(sha256sum <"$2")" ]' _ \
			"$mnt/big.bin" "$SRC/big.bin"
	fi
	for spec in 1:4:1048576 2:5:12345 3:8:65537; do
		IFS=: read -r r n l <<<"$spec"
		drop "$mnt/big.bin"
		rc_check "[$tag] strided rank $r of $n, record $l, byte-exact" \
			"$TRAINER" --compute-ms 0 --batch 4M --read-size 256K \
			--stride $((n * l)) --record "$l" --offset $((r * l)) \
			--check "$SRC/big.bin" "$mnt/big.bin"
	done
	drop "$mnt/big.bin"
	rc_check "[$tag] 1000 random preads of 1 B..1 MiB byte-exact" \
		"$HELPERS/randread" -s 21 -n 1000 -m $MiB "$mnt/big.bin" "$SRC/big.bin"
	drop "$mnt/big.bin"
	rc_check "[$tag] mmap: sequential and 1000 random page touches" \
		"$HELPERS/mmapread" -s 22 -n 1000 "$mnt/big.bin" "$SRC/big.bin"
	rm -f "$WORK"/conc.*
	drop "$mnt"/seq/*.bin
	g eight_readers "$mnt" || fail "[$tag] 8 concurrent readers: HANG"
	for i in 0 1 2 3 4 5 6 7; do
		grep -qx 'rc=0' "$WORK/conc.$i" 2>/dev/null || {
			bad=$((bad + 1))
			echo "  reader $i: $(cat "$WORK/conc.$i" 2>/dev/null)"
		}
	done
	check "[$tag] 8 concurrent readers of 8 MiB files, all byte-exact" test $bad -eq 0
}

# ---- HTML autoindex -------------------------------------------------------------
nginx_start "$SRC" >/dev/null || { fail "nginx (HTML autoindex)"; finish; }
HTML_URL=$NGINX_URL
HTML_PORT=$NGINX_PORT
M=$WORK/mnt-html
pf_mount_ready "$HTML_URL" "$M" || { fail "mount of the HTML autoindex"; finish; }
ok "mounted $HTML_URL (HTML autoindex)"

# the stats first, on a file nothing has read yet: trainer batches of 8 MiB
rc_check "[html] sequential trainer over stats.bin, byte-exact" \
	"$TRAINER" --batch 8M --compute-ms 20 --check "$SRC/stats.bin" "$M/stats.bin"
cat "$M/.prefetchfs/stats" >"$WORK/stats.json"
# jx WHAT EXPR: a check over those stats (stats_check)
jx() { stats_check "$1" "$WORK/stats.json" "$2"; }
jx "[html] stats: stats.bin has a stream" 'stream("stats.bin") is not None'
jx "[html] stats: its pattern is \"sequential\"" \
	'stream("stats.bin") is not None and stream("stats.bin")["pattern"] == "sequential"'
jx "[html] stats: bytes_fetched covers the file (>= 32 MiB)" 't["bytes_fetched"] >= 32 << 20'
jx "[html] stats: bytes_fetched <= 1.5 x the file (nothing fetched twice)" 't["bytes_fetched"] <= 1.5 * (32 << 20)'
jx "[html] stats: bytes_prefetched > 0" 't["bytes_prefetched"] > 0'
jx "[html] stats: no fetch errors" 't["fetch_errors"] == 0'

same_tree html "$M"
all_reads html "$M"

# errors on the mount
errno_checks html <<'EOF'
ENOENT a missing name	os.stat(m + "/no such file")
ENOENT a missing name in a subdirectory	os.stat(m + "/seq/file-999999.bin")
ENOENT a missing name under a missing directory	os.stat(m + "/no dir/x")
ENOENT open of a missing name (the escaped form of a real one)	os.open(m + "/odd names/100%25.txt", os.O_RDONLY)
ENOENT open of a missing name	os.open(m + "/odd names/100.txt", os.O_RDONLY)
EROFS create a file	open(m + "/new.txt", "w")
EROFS open a file for writing	os.open(m + "/big.bin", os.O_WRONLY)
EROFS truncate	os.truncate(m + "/big.bin", 0)
EROFS unlink	os.unlink(m + "/empty")
EROFS mkdir	os.mkdir(m + "/newdir")
EROFS rmdir	os.rmdir(m + "/empty dir")
EROFS rename	os.rename(m + "/empty", m + "/empty2")
EROFS chmod	os.chmod(m + "/big.bin", 0o600)
EROFS symlink	os.symlink("big.bin", m + "/link")
EROFS set an xattr	os.setxattr(m + "/big.bin", "user.x", b"1")
EOF
check "[html] the source is untouched" test -z "$(find "$SRC" -newer "$WORK/tree.src" -print -quit)"
pf_umount "$M"
clean_log "$M"

# ---- JSON autoindex -----------------------------------------------------------
# with a cache much smaller than the data, so that every read path goes
# to the server again and again
nginx_start "$SRC" --json >/dev/null || { fail "nginx (JSON autoindex)"; finish; }
M=$WORK/mnt-json
pf_mount_ready "$NGINX_URL" "$M" -o max_memory=24M || { fail "mount of the JSON autoindex"; finish; }
ok "mounted $NGINX_URL (JSON autoindex, max_memory=24M)"
check "[json] the stats name the directory index" grep -q 'index' "$M/.prefetchfs/stats"
same_tree json "$M"
all_reads json "$M"
pf_umount "$M"
clean_log "$M"

# ---- HTTPS ----------------------------------------------------------------------
nginx_start "$SRC" --tls >/dev/null || { fail "nginx (TLS)"; finish; }
M=$WORK/mnt-tls
pf_mount_ready "$NGINX_URL" "$M" -o cacert="$NGINX_CACERT" || { fail "mount of $NGINX_URL with cacert"; finish; }
ok "mounted $NGINX_URL with -o cacert"
g tree_of "$M" >"$WORK/tree.tls"
check "[https] listing equals the source tree" cmp -s "$WORK/tree.src" "$WORK/tree.tls"
drop "$M/big.bin"
rc_check "[https] sequential cat of big.bin byte-exact" cmp "$SRC/big.bin" "$M/big.bin"
drop "$M/big.bin"
rc_check "[https] 500 random preads byte-exact" \
	"$HELPERS/randread" -s 31 -n 500 -m $MiB "$M/big.bin" "$SRC/big.bin"
rc_check "[https] odd name byte-exact" cmp "$SRC/odd names/bin #1 & more.bin" "$M/odd names/bin #1 & more.bin"
pf_umount "$M"
clean_log "$M"
bad_mount "https without cacert" 'certif|verif|ssl|tls' 20 "$NGINX_URL" -o retries=1
bad_mount "https with an unrelated CA bundle" 'certif|verif|ssl|tls' 20 "$NGINX_URL" \
	-o retries=1,cacert=/etc/ssl/certs/ca-certificates.crt

# ---- manifest -------------------------------------------------------------------
# served by the HTML nginx from a directory of its own (not under the
# source); names as they are, "PATH SIZE" a line
MAN=$WORK/mansrv
mkdir -p "$MAN"
{
	echo "# a subset of the tree"
	printf '%s %s\n' "big.bin" "$(stat -c %s "$SRC/big.bin")"
	printf '%s %s\n' "seq/file-000003.bin" "$(stat -c %s "$SRC/seq/file-000003.bin")"
	printf '%s %s\n' "odd names/bin #1 & more.bin" "$(stat -c %s "$SRC/odd names/bin #1 & more.bin")"
	printf '%s %s\n' "odd names/100%.txt" "$(stat -c %s "$SRC/odd names/100%.txt")"
	printf '%s %s\n' "empty" 0
} >"$MAN/manifest.txt"
cat >"$WORK/tree.man.want" <<EOF
d - ./odd names
d - ./seq
f 0 ./empty
f $(stat -c %s "$SRC/big.bin") ./big.bin
f $(stat -c %s "$SRC/odd names/100%.txt") ./odd names/100%.txt
f $(stat -c %s "$SRC/odd names/bin #1 & more.bin") ./odd names/bin #1 & more.bin
f $(stat -c %s "$SRC/seq/file-000003.bin") ./seq/file-000003.bin
EOF
LC_ALL=C sort -o "$WORK/tree.man.want" "$WORK/tree.man.want"
nginx_start "$MAN" >/dev/null || { fail "nginx (manifest)"; finish; }
M=$WORK/mnt-manifest
pf_mount_ready "$HTML_URL" "$M" -o manifest="${NGINX_URL}manifest.txt" ||
	{ fail "mount with -o manifest"; finish; }
ok "mounted $HTML_URL with -o manifest=${NGINX_URL}manifest.txt"
g tree_of "$M" >"$WORK/tree.man"
if diff "$WORK/tree.man.want" "$WORK/tree.man" >"$WORK/tree.man.diff"; then
	ok "[manifest] the mount shows exactly the manifest's files"
else
	fail "[manifest] the mount does not show exactly the manifest's files (< want, > mount):"
	cat "$WORK/tree.man.diff"
fi
drop "$M/big.bin"
rc_check "[manifest] big.bin byte-exact" cmp "$SRC/big.bin" "$M/big.bin"
rc_check "[manifest] seq/file-000003.bin byte-exact" cmp "$SRC/seq/file-000003.bin" "$M/seq/file-000003.bin"
rc_check "[manifest] odd names/bin #1 & more.bin byte-exact" \
	cmp "$SRC/odd names/bin #1 & more.bin" "$M/odd names/bin #1 & more.bin"
rc_check "[manifest] odd names/100%.txt byte-exact" cmp "$SRC/odd names/100%.txt" "$M/odd names/100%.txt"
errno_checks manifest <<'EOF'
ENOENT a file of the tree not in the manifest	os.stat(m + "/stats.bin")
ENOENT a directory of the tree not in the manifest	os.stat(m + "/empty dir")
EOF
pf_umount "$M"
clean_log "$M"

# ---- a file replaced while it is open ----------------------------------------
# nginx checks If-Match against its ETag (mtime and size): the versions
# have the same size and different mtimes.  The replacement is a rename,
# as a dataset update would be.
RS=$WORK/replsrc
mkdir -p "$RS"
mkfile "$WORK/rep.v1" $((48 * MiB))
mkfile "$WORK/rep.v2" $((48 * MiB))
cp "$WORK/rep.v1" "$RS/rep.bin"
touch -d '2020-01-01 00:00:00' "$RS/rep.bin"
cp "$WORK/rep.v2" "$RS/rep.bin.new"
touch -d '2021-01-01 00:00:00' "$RS/rep.bin.new"
nginx_start "$RS" >/dev/null || { fail "nginx (replaced file)"; finish; }
M=$WORK/mnt-replace
pf_mount_ready "$NGINX_URL" "$M" -o prefetch=off || fail "mount with prefetch=off"
# (the listing is made before the rename: only rep.bin is in it)
g ls "$M" >/dev/null
rc_check "replaced while open: a far read gets EIO, never new bytes" \
	replaced_read "$M/rep.bin" "$WORK/rep.v1" "$WORK/rep.v2" mv "$RS/rep.bin.new" "$RS/rep.bin"
sed 's/^/  /' "$WORK/rc.out"
rc_check "replaced: a new open reads the new version byte-exact" cmp "$WORK/rep.v2" "$M/rep.bin"
drop "$M/rep.bin"
rc_check "replaced: random reads of the new version byte-exact" \
	"$HELPERS/randread" -s 45 -n 300 -m $MiB "$M/rep.bin" "$WORK/rep.v2"
pf_umount "$M"
clean_log "$M" "rep\.bin.*(failed|412|[Pp]recondition|changed)"

# ---- a server that is not there, a prefix that is not there ---------------------
CLOSED=$(_srv_free_port)
bad_mount "unreachable server (closed port $CLOSED)" 'connect|refused|reach' 15 \
	"http://127.0.0.1:$CLOSED/data/" -o retries=1,connect_timeout=2
bad_mount "prefix nginx answers 404 for" '404|not found|No such' 15 \
	"${HTML_URL}no-such-prefix/" -o retries=1
bad_mount "a file as the prefix" 'director|index|list|not' 15 \
	"${HTML_URL}empty/" -o retries=1

# a server that accepts connections but never answers: -o timeout ends
# each request, the mount fails after the retries
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
conns = []
while True:
    c, _ = s.accept()
    conns.append(c)
' "$WORK/mute.port" </dev/null >/dev/null 2>&1 &
MUTE_PID=$!
for i in $(seq 100); do [ -s "$WORK/mute.port" ] && break; sleep 0.05; done
bad_mount "a server that never answers (-o timeout=2,retries=1)" 'time|out' 20 \
	"http://127.0.0.1:$(cat "$WORK/mute.port")/data/" -o retries=1,timeout=2,connect_timeout=2
kill "$MUTE_PID" 2>/dev/null
wait "$MUTE_PID" 2>/dev/null

finish
