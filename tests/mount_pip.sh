#!/bin/bash
# The Python package as a user installs it (issue 31): a fresh virtual
# environment that sees Debian's torch (--system-site-packages), `pip
# install --no-index ./python` into it (offline: its build backend needs
# nothing from an index), then
#  1. the package is the venv's copy, its version the daemon's, torch is
#     seen; tests/test_prefetchfs.py (stats() and warm() without a
#     mount) passes with it;
#  2. a torch DataLoader (two workers, shuffled) over a prefetchfs mount,
#     its sampler a HintedSampler given a SUBDIRECTORY of the mount (not
#     its root): every sample byte-exact, no warning, and the mount's
#     stats, read with prefetchfs.stats() from that subdirectory, show the
#     plan (every sample an entry, reads as planned); closing the sampler
#     ends it;
#  3. with prefetchfs-warm built, prefetchfs.warm() over the mount: its
#     reports, the last one done with every byte.
#  4. pip uninstall leaves nothing of the package in the venv.
# The venv lives in the test's temp directory, removed at the end.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"
need_fuse
need_tools
PY=/usr/bin/python3
VENV=$WORK/venv

if ! $PY -c 'import torch' 2>/dev/null; then
	fail "missing package python3-torch (tests/deps.sh installs it)"
	finish
fi
if ! $PY -c 'import ensurepip' 2>/dev/null; then
	fail "missing package python3-venv (tests/deps.sh installs it)"
	finish
fi

# the build writes no byte code into the source tree
export PYTHONDONTWRITEBYTECODE=1
if $PY -m venv --system-site-packages "$VENV" >"$WORK/venv.log" 2>&1; then
	ok "python3 -m venv --system-site-packages"
else
	fail "python3 -m venv --system-site-packages"
	cat "$WORK/venv.log"
	finish
fi
VPY=$VENV/bin/python
# no index at all: what pip would fetch fails at once
if PIP_INDEX_URL=http://127.0.0.1:9/ "$VENV/bin/pip" install --no-index \
	--disable-pip-version-check "$TOP/python" >"$WORK/pip.log" 2>&1; then
	ok "pip install --no-index ./python"
else
	fail "pip install --no-index ./python"
	cat "$WORK/pip.log"
	finish
fi
check "pip left no build output in the source tree (python/build, *.egg-info)" \
	bash -c '[ ! -e "$1/build" ] && [ -z "$(ls -d "$1"/*.egg-info 2>/dev/null)" ]' _ "$TOP/python"

VER=$("$PF" --version | awk '{ print $2 }')
check "the venv's prefetchfs $VER (importlib.metadata, __version__), torch from Debian" \
	"$VPY" -c '
import importlib.metadata as md, sys, torch, prefetchfs
print(prefetchfs.__file__, md.version("prefetchfs"), torch.__file__)
sys.exit(not (prefetchfs.__file__.startswith(sys.prefix + "/") and
              md.version("prefetchfs") == prefetchfs.__version__ == sys.argv[1] and
              torch.__file__.startswith("/usr/lib/python3/")))' "$VER"

if (cd "$WORK" && "$VPY" -W error::ResourceWarning "$TOP/tests/test_prefetchfs.py") \
	>"$WORK/unittest.out" 2>&1; then
	ok "tests/test_prefetchfs.py with the venv's package: $(grep -E '^Ran ' "$WORK/unittest.out")"
else
	fail "tests/test_prefetchfs.py with the venv's package"
	tail -40 "$WORK/unittest.out"
fi

# ---- a DataLoader with HintedSampler over a mount --------------------------------
SRC=$WORK/src
M=$WORK/mnt
N=48
mkdir -p "$SRC/data/train/c0" "$SRC/data/train/c1" "$SRC/other"
for ((i = 0; i < N; i++)); do
	mkfile "$SRC/data/train/c$((i % 2))/s$i.bin" $((40000 + i * 1531))
done
mkfile "$SRC/other/x.bin" 100000
pf_mount "$SRC" "$M" -o max_memory=64M || { fail "prefetchfs mount"; finish; }
ok "mounted prefetchfs"

cat >"$WORK/loader.py" <<'EOF'
import os, sys, warnings
import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler
import prefetchfs

mnt, src, sub = sys.argv[1:4]
warnings.simplefilter("error")          # a refused plan is a failure


class Files(Dataset):
    def __init__(self, root):
        self.paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(root)
                            for f in fs)

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            return f.read(), i


ds = Files(os.path.join(mnt, sub))
g = torch.Generator().manual_seed(5)
hs = prefetchfs.HintedSampler(RandomSampler(ds, generator=g),
                              lambda i: ds.paths[i], os.path.join(mnt, sub))
loader = DataLoader(ds, batch_size=4, sampler=hs, num_workers=2,
                    collate_fn=lambda b: b)
bad = n = 0
for batch in loader:
    for data, i in batch:
        with open(ds.paths[i].replace(mnt, src, 1), "rb") as f:
            bad += f.read() != data
        n += 1
s = prefetchfs.stats(os.path.join(mnt, sub))
print("samples", n, "differ", bad, "root", s.root, "declared", hs.declared)
print("plans", s.plans)
p = s.plans[0] if len(s.plans) == 1 else {}
ok = (n == len(ds) and bad == 0 and s.root == mnt and hs.mountpoint == mnt
      and hs.declared == len(ds) and p.get("entries") == len(ds)
      and p.get("read_planned", 0) > 0)
hs.close()
e = prefetchfs.stats(mnt)
print("after close", e.plans, e.plans_ended)
ok = ok and e.plans == [] and e.plans_ended.get("plans", 0) >= 1 and \
    e.plans_ended.get("declared", 0) >= len(ds)
print("reads", e.reads, "hit_rate", e.hit_rate, "wait_s", e.wait_s)
sys.exit(not ok)
EOF
if guard "$M" 120 "$VPY" "$WORK/loader.py" "$M" "$SRC" data/train >"$WORK/loader.out" 2>&1; then
	ok "DataLoader + HintedSampler(mount/data/train): $N samples byte-exact, the plan taken and shown by stats()"
else
	fail "DataLoader + HintedSampler(mount/data/train)"
fi
cat "$WORK/loader.out"

# ---- warm() with the real prefetchfs-warm ------------------------------------------
if [ -x "$TOP/prefetchfs-warm" ]; then
	total=$(find "$SRC/other" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	if guard "$M" 120 "$VPY" -c '
import sys, prefetchfs
seen = []
last = prefetchfs.warm(sys.argv[1], ["other"], seen.append, program=sys.argv[2])
print(seen[-3:], last)
sys.exit(not (last["done"] and last["bytes_total"] == int(sys.argv[3]) and
              last["bytes"] == last["bytes_total"]))' "$M" "$TOP/prefetchfs-warm" "$total" \
		>"$WORK/warm.out" 2>&1; then
		ok "prefetchfs.warm(mount, [other]) with prefetchfs-warm: done, $total bytes"
	else
		fail "prefetchfs.warm(mount, [other]) with prefetchfs-warm"
	fi
	cat "$WORK/warm.out"
else
	ok "(prefetchfs-warm is not built: warm() tested with tests/test_prefetchfs.py's stand-in only)"
fi
pf_umount "$M"

if "$VENV/bin/pip" uninstall -y prefetchfs >"$WORK/uninstall.log" 2>&1; then
	left=$(find "$VENV/lib" -path '*prefetchfs*' | head -5)
	check "pip uninstall prefetchfs leaves nothing${left:+ (left: $left)}" test -z "$left"
else
	fail "pip uninstall prefetchfs"
	cat "$WORK/uninstall.log"
fi

finish
