#!/bin/bash
# The container recipe's entrypoint, packaging/entrypoint.sh, run here as
# a plain process with its environment set, as a container runs it
# (issue 31; no container engine is needed):
#  1. serving: mounts PREFETCHFS_SOURCE on PREFETCHFS_MOUNTPOINT with
#     PREFETCHFS_OPTIONS, the daemon its child in the foreground;
#     byte-exact reads; SIGTERM unmounts, the daemon and the script exit
#     0;
#  2. COMMAND mode: the command runs once the mount is there, its exit
#     status is the script's, the mount goes when it ends; SIGTERM goes
#     to the command first, then the mount goes;
#  3. the daemon killed (SIGKILL): the script removes the dead mount and
#     exits with the daemon's status; a dead mount an earlier run left
#     on the mount point is removed before mounting;
#  4. clear one-line errors: a variable missing (exit 2), no /dev/fuse (a
#     private mount namespace where /dev/fuse is a regular file), no
#     CAP_SYS_ADMIN (setpriv drops it from the bounding set), each with
#     no mount made;
#  5. the Dockerfile installs the .deb and runs this entrypoint; the
#     Kubernetes examples parse, mount with the propagation they need and
#     name the privileges docs/packaging.md explains.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools
EP=$TOP/packaging/entrypoint.sh

SRC=$WORK/src
mkdir -p "$SRC/sub"
mkfile "$SRC/a.bin" $((1048576 + 77))
mkfile "$SRC/sub/b.bin" 50000
printf 'hello\n' >"$SRC/hello.txt"

export PREFETCHFS_SOURCE=$SRC PREFETCHFS_BIN=$PF PREFETCHFS_OPTIONS=max_memory=64M

# start_ep NAME MNT [COMMAND...]: the entrypoint in the background, its
# output in $WORK/NAME.out, its pid in EP_PID; returns once MNT is
# mounted (1 if the entrypoint exits first or 20 s pass)
start_ep() {
	local name=$1 mnt=$2 i
	shift 2
	track_mount "$mnt"
	PREFETCHFS_MOUNTPOINT=$mnt setsid sh "$EP" "$@" >"$WORK/$name.out" 2>&1 &
	EP_PID=$!
	for ((i = 0; i < 200; i++)); do
		grep -q "^prefetchfs-entrypoint: mounted .* on $mnt" "$WORK/$name.out" && return 0
		kill -0 "$EP_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# ep_exit PID TENTHS: wait for the entrypoint, its exit status in EP_RC
# (255 if it did not exit in time)
ep_exit() {
	EP_RC=255
	wait_gone "$1" "$2" && { wait "$1"; EP_RC=$?; }
}

byte_exact() {
	local f bad=
	for f in a.bin sub/b.bin hello.txt; do
		guard "$1" 30 cmp -s "$SRC/$f" "$1/$f" || bad="$bad $f"
	done
	check "$2: byte-exact reads${bad:+ (differ:$bad)}" test -z "$bad"
}

# ---- 1. serving, SIGTERM ---------------------------------------------------------------
M=$WORK/mnt
if start_ep serve "$M"; then
	ok "entrypoint: mounted, says so: $(grep mounted "$WORK/serve.out")"
	check "the mount is fuse.prefetchfs with the options" \
		bash -c 'grep -qE " $1 .* - fuse.prefetchfs " /proc/self/mountinfo' _ "$M"
	dpid=$(pf_pid "$M")
	check "the daemon runs in the foreground as the entrypoint's child" \
		bash -c '[ -n "$1" ] && [ "$(ps -o ppid= -p "$1" | tr -d " ")" = "$2" ] &&
			tr "\0" " " <"/proc/$1/cmdline" | grep -q -- " -f -o max_memory=64M "' _ "$dpid" "$EP_PID"
	byte_exact "$M" "entrypoint mount"
	kill -TERM "$EP_PID"
	ep_exit "$EP_PID" 100
	check "SIGTERM: the entrypoint exits 0 (exit $EP_RC)" test "$EP_RC" -eq 0
	check "SIGTERM: unmounted" bash -c '! is_mounted() { awk -v m="$1" "\$5 == m { f = 1 } END { exit !f }" /proc/self/mountinfo; }; ! is_mounted "$1"' _ "$M"
	check "SIGTERM: the daemon is gone" wait_gone "${dpid:-1}" 50
	check "SIGTERM: it says it unmounted" grep -q "unmounted $M" "$WORK/serve.out"
else
	fail "entrypoint: no mount"
fi
cat "$WORK/serve.out"

# ---- 2. COMMAND mode -----------------------------------------------------------------------
M2=$WORK/mnt2
mkdir -p "$M2"
PREFETCHFS_MOUNTPOINT=$M2 timeout 60 sh "$EP" sh -c \
	'cmp -s "$1/a.bin" "$2/a.bin" && cmp -s "$1/sub/b.bin" "$2/sub/b.bin" && exit 7' _ "$SRC" "$M2" \
	>"$WORK/cmd.out" 2>&1
rc=$?
check "COMMAND mode: the command read the mount byte-exact, its status is the script's (exit $rc)" \
	test $rc -eq 7
check "COMMAND mode: unmounted when the command ended" bash -c '! mountpoint -q "$1"' _ "$M2"
cat "$WORK/cmd.out"
if start_ep cmdterm "$M2" sleep 600; then
	sleeper=$(pgrep -P "$EP_PID" -x sleep)
	kill -TERM "$EP_PID"
	ep_exit "$EP_PID" 100
	check "COMMAND mode, SIGTERM: to the command first, its status 143 (exit $EP_RC)" \
		test "$EP_RC" -eq 143
	check "COMMAND mode, SIGTERM: the command ended" wait_gone "${sleeper:-1}" 10
	check "COMMAND mode, SIGTERM: unmounted" bash -c '! mountpoint -q "$1"' _ "$M2"
else
	fail "entrypoint sleep 600: no mount"
fi
cat "$WORK/cmdterm.out"

# ---- 3. the daemon killed; a dead mount left from before --------------------------------
M3=$WORK/mnt3
if start_ep killed "$M3"; then
	dpid=$(pf_pid "$M3")
	kill -KILL "$dpid"
	ep_exit "$EP_PID" 100
	check "the daemon SIGKILLed: the entrypoint exits with its status 137 (exit $EP_RC)" \
		test "$EP_RC" -eq 137
	check "the daemon SIGKILLed: its dead mount removed" bash -c '! grep -q " $1 " /proc/self/mountinfo' _ "$M3"
	check "the daemon SIGKILLed: it says so" grep -q "left its mount on $M3" "$WORK/killed.out"
else
	fail "entrypoint: no mount (daemon killed case)"
fi
cat "$WORK/killed.out"
M4=$WORK/mnt4
if pf_mount "$SRC" "$M4"; then
	dpid=$(pf_pid "$M4")
	kill -KILL "$dpid"
	wait_gone "$dpid" 50
	check "a dead mount is there before the entrypoint starts" \
		bash -c 'grep -q " $1 " /proc/self/mountinfo && ! ls "$1" >/dev/null 2>&1' _ "$M4"
	if start_ep stale "$M4"; then
		check "the dead mount removed first: it says so" \
			grep -q "removing the dead mount an earlier run left on $M4" "$WORK/stale.out"
		byte_exact "$M4" "over a dead mount"
		check "one mount on the mount point" test "$(grep -c " $M4 " /proc/self/mountinfo)" -eq 1
		kill -TERM "$EP_PID"
		ep_exit "$EP_PID" 100
		check "then SIGTERM: exit 0 (exit $EP_RC), unmounted" \
			bash -c '[ "$2" -eq 0 ] && ! grep -q " $1 " /proc/self/mountinfo' _ "$M4" "$EP_RC"
	else
		fail "entrypoint over a dead mount: no mount"
	fi
	cat "$WORK/stale.out"
	# a live one is not mounted over
	if pf_mount "$SRC" "$M4"; then
		PREFETCHFS_MOUNTPOINT=$M4 timeout 20 sh "$EP" >"$WORK/live.out" 2>&1
		rc=$?
		check "a live prefetchfs on the mount point: exit 1, one line: $(cat "$WORK/live.out")" \
			bash -c '[ "$2" -eq 1 ] && [ "$(wc -l <"$1")" -eq 1 ] && grep -q "already mounted on" "$1"' \
			_ "$WORK/live.out" "$rc"
		pf_umount "$M4"
	fi
else
	fail "pf_mount for the dead-mount case"
fi

# ---- 4. errors --------------------------------------------------------------------------------
M5=$WORK/mnt5
# one_line_fail WHAT RC WORD CMD...: CMD exits RC with one line holding WORD, mounts nothing
one_line_fail() {
	local what=$1 want=$2 word=$3
	shift 3
	"$@" >"$WORK/err.out" 2>&1
	local rc=$?
	check "$what: exit $want (exit $rc), one line naming $word: $(head -2 "$WORK/err.out")" \
		bash -c '[ "$2" -eq "$3" ] && [ "$(wc -l <"$1")" -eq 1 ] &&
			grep -q "^prefetchfs-entrypoint: .*$4" "$1"' _ "$WORK/err.out" "$rc" "$want" "$word"
	check "$what: no mount" bash -c '! grep -q " $1 " /proc/self/mountinfo' _ "$M5"
}
one_line_fail "PREFETCHFS_MOUNTPOINT unset" 2 PREFETCHFS_MOUNTPOINT \
	env -u PREFETCHFS_MOUNTPOINT sh "$EP"
one_line_fail "PREFETCHFS_SOURCE unset" 2 PREFETCHFS_SOURCE \
	env -u PREFETCHFS_SOURCE PREFETCHFS_MOUNTPOINT="$M5" sh "$EP"
: >"$WORK/not-a-device"
PREFETCHFS_MOUNTPOINT=$M5 one_line_fail "no /dev/fuse" 1 "no /dev/fuse" \
	unshare -m --propagation private sh -c 'mount --bind "$1" /dev/fuse && exec sh "$2"' \
	_ "$WORK/not-a-device" "$EP"
if command -v setpriv >/dev/null; then
	PREFETCHFS_MOUNTPOINT=$M5 one_line_fail "no CAP_SYS_ADMIN" 1 "CAP_SYS_ADMIN.*--cap-add SYS_ADMIN" \
		setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin sh "$EP"
else
	fail "setpriv missing (util-linux)"
fi

# ---- 5. the Dockerfile and the Kubernetes examples -------------------------------------------
D=$TOP/packaging/Dockerfile
check "the Dockerfile: Debian 12, installs the .deb, runs the entrypoint" \
	bash -c 'grep -qE "^FROM debian:(12|bookworm)" "$1" &&
		grep -q "apt-get install" "$1" && grep -qE "^\s+/tmp/prefetchfs_\*\.deb" "$1" &&
		grep -q "^COPY packaging/entrypoint.sh " "$1" &&
		grep -q "^ENTRYPOINT \[\"/usr/local/bin/prefetchfs-entrypoint\"\]" "$1"' _ "$D"
if /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
	/usr/bin/python3 - "$TOP/packaging/k8s" >"$WORK/k8s.out" 2>&1 <<'EOF'
import os, sys, yaml
d = sys.argv[1]
bad = []


def containers(spec):
    return spec.get("initContainers", []) + spec.get("containers", [])


def check(cond, what):
    print(("ok   " if cond else "BAD  ") + what)
    if not cond:
        bad.append(what)


docs = {f: [x for x in yaml.safe_load_all(open(os.path.join(d, f))) if x]
        for f in ("daemonset.yaml", "sidecar.yaml")}
ds = [x for x in docs["daemonset.yaml"] if x["kind"] == "DaemonSet"]
check(len(ds) == 1, "daemonset.yaml: one DaemonSet")
spec = ds[0]["spec"]["template"]["spec"]
pf = [c for c in containers(spec) if c.get("name") == "prefetchfs"][0]
vm = {v["name"]: v for v in pf["volumeMounts"]}
vols = {v["name"]: v for v in spec["volumes"]}
env = {e["name"]: e.get("value") for e in pf["env"]}
mnt = [v for v in vm.values() if v.get("mountPropagation") == "Bidirectional"]
check(len(mnt) == 1 and "hostPath" in vols[mnt[0]["name"]],
      "daemonset.yaml: a hostPath volume mounted Bidirectional")
check(pf["securityContext"].get("privileged") is True,
      "daemonset.yaml: privileged (Bidirectional needs it)")
check(env.get("PREFETCHFS_MOUNTPOINT", "").startswith(mnt[0]["mountPath"] + "/"),
      "daemonset.yaml: the mount point is under the propagated volume")
check("allow_other" in env.get("PREFETCHFS_OPTIONS", ""),
      "daemonset.yaml: allow_other (other pods' users read it)")
check("exec" in pf.get("startupProbe", pf.get("readinessProbe", {})),
      "daemonset.yaml: a probe that the mount answers")

sc = [x for x in docs["sidecar.yaml"] if x["kind"] in ("Pod", "Job")]
check(len(sc) == 1, "sidecar.yaml: one Pod or Job")
spec = sc[0]["spec"]
spec = spec["template"]["spec"] if sc[0]["kind"] == "Job" else spec
cs = {c["name"]: c for c in containers(spec)}
pf = cs.get("prefetchfs", {})
check(pf in spec.get("initContainers", []) and pf.get("restartPolicy") == "Always",
      "sidecar.yaml: prefetchfs a native sidecar (init container, restartPolicy Always)")
check("exec" in pf.get("startupProbe", {}),
      "sidecar.yaml: its startupProbe holds the trainer until the mount answers")
check(pf.get("securityContext", {}).get("privileged") is True,
      "sidecar.yaml: the sidecar privileged (Bidirectional needs it)")
vols = {v["name"]: v for v in spec["volumes"]}
pv = [v for v in pf.get("volumeMounts", []) if v.get("mountPropagation") == "Bidirectional"]
check(len(pv) == 1 and "emptyDir" in vols[pv[0]["name"]],
      "sidecar.yaml: an emptyDir shared Bidirectional by the sidecar")
others = [c for n, c in cs.items() if n != "prefetchfs"]
check(others and all(any(v["name"] == pv[0]["name"] and v.get("mountPropagation") == "HostToContainer"
                         for v in c.get("volumeMounts", [])) and
                     not c.get("securityContext", {}).get("privileged") for c in others),
      "sidecar.yaml: the trainer sees it HostToContainer, unprivileged")
sys.exit(1 if bad else 0)
EOF
	rc=$?
	cat "$WORK/k8s.out"
	check "packaging/k8s: the examples parse and mount as they must (exit $rc)" test $rc -eq 0
else
	fail "python3-yaml missing (tests/deps.sh installs it)"
fi
DOC=$TOP/docs/packaging.md
check "docs/packaging.md explains each privilege" \
	bash -c 'for w in /dev/fuse SYS_ADMIN Bidirectional HostToContainer privileged AppArmor; do grep -q "$w" "$1" || exit 1; done' _ "$DOC"

finish
