#!/bin/bash
# How long an object-store mount may wait and how long an open's pin
# lasts, against tests/helpers/faultd.py (its request log tells what the
# daemon asked); the pins that time nothing: tests/mount_objstore_pins.sh.
#   4. request_timeout: a body trickled at 2 bytes a second, an error body
#      without end, a directory index trickled: EIO within the deadline,
#      the mount serves other files
#   6. opens without round trips: nginx's JSON index gave size and mtime, so
#      an open within revalidate= makes no HEAD; the object replaced: EIO to
#      readers of the old version; after revalidate= an open HEADs and reads
#      the new bytes; revalidate=0 HEADs at every open
# 4 runs while 6 waits for revalidate= to run out.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
. "$(dirname "$0")/objstore_common.sh"
need_fuse
need_tools

# ---- the source ----------------------------------------------------------
J=$WORK/json		# nginx JSON index (size, mtime), with ETag
mkdir -p "$J/sub"
for f in j1 j2 j3 t1 t2 t3; do mkfile "$J/$f.bin" $((1 << 20)); done
for i in $(seq 40); do : >"$J/sub/file-with-a-long-name-$i.dat"; done
cp "$J/j1.bin" "$WORK/j1.v1"
faultd_start "$J" --json-index >/dev/null || { fail "faultd"; finish; }
UJ=$FAULTD_URL
faultd_start "$J" --json-index >/dev/null || { fail "faultd"; finish; }
UD=$FAULTD_URL

# ---- 6. opens without round trips ---------------------------------------------
# (the root is listed at mount: revalidate runs from before pf_mount_ready; 12 s
# leave room for a slow machine between the listing and the reopen of j2,
# about 2 s on an idle one)
M=$WORK/mnt-json
t0=$(date +%s.%N)
pf_mount_ready "$UJ/" "$M" -o "$SMALL,revalidate=12" || exit 1
guard "$M" 40 ls -l "$M" >/dev/null
reset "$UJ"
check "[revalidate] j2.bin reads whole" guard "$M" 40 cmp "$M/j2.bin" "$J/j2.bin"
r=$(rd1 "$M" "$M/j1.bin" 0 $K64 "$WORK/j1.v1")
check "[revalidate] j1.bin's first 64K ($r)" grep -q '^ok ' <<<"$r"
n=$(nlog "$UJ" 'len(H("j1.bin")) + len(H("j2.bin"))')
check "[revalidate] opens of listed files made no HEAD ($n)" test "$n" = 0
n=$(nlog "$UJ" 'len(G("j1.bin")) > 0 and len(G("j2.bin")) > 0')
check "[revalidate] ... and read with GETs" test "$n" = True
cp "$J/j2.bin" "$WORK/j2.v1"
past_mtime "$J/j1.bin" "$J/j2.bin"
curl -sf "$UJ/_replace?path=/j1.bin" >/dev/null || fail "replacing j1.bin"
curl -sf "$UJ/_replace?path=/j2.bin" >/dev/null || fail "replacing j2.bin"
r=$(rd1 "$M" "$M/j1.bin" $((512 << 10)) $K64 "$WORK/j1.v1" "$J/j1.bin")
check "[revalidate] j1.bin replaced, within revalidate: EIO, not new bytes ($r)" grep -q '^errno 5 ' <<<"$r"
check "[revalidate] j1.bin: the next open (the change was seen) reads the new bytes" guard "$M" 40 cmp "$M/j1.bin" "$J/j1.bin"
n=$(nlog "$UJ" 'len(H("j1.bin"))')
check "[revalidate] ... after a HEAD ($n)" test "$n" = 1
check "[revalidate] j2.bin replaced, reopened within revalidate: its cached old bytes" \
	guard "$M" 40 cmp "$M/j2.bin" "$WORK/j2.v1"
n=$(nlog "$UJ" 'len(H("j2.bin"))')
check "[revalidate] ... without a HEAD ($n)" test "$n" = 0
el=$(python3 -c "print('%.1f' % ($(date +%s.%N) - $t0))")
check "[revalidate] (that reopen came ${el} s after the listing, within 12 s)" \
	python3 -c "import sys; sys.exit(not $el < 12)"

# ---- 4. total deadline per request ----------------------------------------
# (while mnt-json's revalidate=12 runs out; its own faultd, so that 6's
# request log sees none of these requests)
M=$WORK/mnt-deadline
# (list_ahead=0: the trickled directory is listed at its use, not at mount)
pf_mount_ready "$UD/" "$M" -o "$SMALL,timeout=3,retries=1,request_timeout=4,list_ahead=0" || exit 1
fault "$UD" 'path=/t1.bin&method=GET&mode=trickle:2&count=inf'
fault "$UD" 'path=/t2.bin&method=GET&mode=endless:500&count=inf'
r=$(rd1 "$M" "$M/t1.bin" 0 $K64 "$J/t1.bin")
echo "  trickle: $r"
check "[deadline] a body trickled at 2 B/s: EIO" grep -q '^errno 5 ' <<<"$r"
check "[deadline] ... within 2 x request_timeout=4 (the kernel reads a failed page again) and a margin (${r##* } s)" \
	python3 -c "import sys; sys.exit(not float('${r##* }') < 13)"
r=$(rd1 "$M" "$M/t2.bin" 0 $K64 "$J/t2.bin")
echo "  endless error body: $r"
check "[deadline] an error body without end: EIO" grep -q '^errno 5 ' <<<"$r"
check "[deadline] ... within 2 x request_timeout=4 (the kernel reads a failed page again) and a margin (${r##* } s)" \
	python3 -c "import sys; sys.exit(not float('${r##* }') < 13)"
fault "$UD" 'path=/sub/&method=GET&mode=trickle:2&count=inf'
r=$(lsd "$M" 40 "$M/sub")
echo "  listing trickled: $r"
check "[deadline] a directory index trickled at 2 B/s: ls fails with EIO" grep -q '^errno 5 ' <<<"$r"
check "[deadline] ... within request_timeout=4 and a margin (${r##* } s)" \
	python3 -c "import sys; sys.exit(not float('${r##* }') < 10)"
check "[deadline] the mount still serves another file" guard "$M" 40 cmp "$M/t3.bin" "$J/t3.bin"
check "[deadline] the daemon said why" grep -q 'request_timeout' "$WORK/daemon.mnt-deadline.log"
reset "$UD"

# ---- 6. after revalidate= ---------------------------------------------------
M=$WORK/mnt-json
sleep "$(python3 -c "print(max(0, 13 - ($(date +%s.%N) - $t0)))")"
check "[revalidate] after revalidate= an open reads the new j2.bin" guard "$M" 40 cmp "$M/j2.bin" "$J/j2.bin"
n=$(nlog "$UJ" 'len(H("j2.bin"))')
check "[revalidate] ... after a HEAD ($n)" test "$n" = 1
M=$WORK/mnt-json0
pf_mount_ready "$UJ/" "$M" -o "$SMALL,revalidate=0" || exit 1
guard "$M" 40 ls -l "$M" >/dev/null
reset "$UJ"
check "[revalidate=0] j3.bin reads whole" guard "$M" 40 cmp "$M/j3.bin" "$J/j3.bin"
n=$(nlog "$UJ" 'len(H("j3.bin"))')
check "[revalidate=0] the open made a HEAD ($n)" test "$n" = 1

finish
