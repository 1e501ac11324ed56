#!/usr/bin/python3
"""WebDataset-style tar shards streamed with tarfile; prints its data wait.

    /usr/bin/python3 examples/tar_shards.py [--batch 32] [--compute-ms 40]
        [--epochs 1] [--checksum] PATH...
    /usr/bin/python3 examples/tar_shards.py --make DIR [--shards 8]
        [--samples 256] [--sample-size 64K]

PATH is a .tar shard or a directory (its .tar files below it, in name
order), for example a prefetchfs mountpoint:

    /usr/bin/python3 examples/tar_shards.py --make /data/shards
    prefetchfs /data/shards /mnt/shards
    /usr/bin/python3 examples/tar_shards.py /mnt/shards

Standard library only.  Each shard is read front to back in tarfile's
streaming mode ("r|": no seeks, as WebDataset reads a shard from a pipe or
an HTTP stream); consecutive members whose names share a key (the path up
to the first dot of the file name: 000012.jpg, 000012.cls -> 000012) make
one sample.  After every --batch samples the loop "computes" (sleeps) for
--compute-ms.

--make writes --shards shards of --samples samples each into DIR
(shard-000000.tar, ...); a sample is KEY.bin of --sample-size
pseudo-random bytes, KEY.cls (a class number) and KEY.json.

Output, one line of key=value pairs (as examples/simple_trainer.py):
data_wait_pct = (wall - compute) / wall; bytes counts the members' bytes.
With --checksum it also prints sha256= over the samples in order (compare
a run on the mount with one on the source).
"""
import argparse
import hashlib
import json
import os
import random
import sys
import tarfile
import time


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    if t.endswith("IB"):
        t = t[:-2]
    elif t.endswith("B") and len(t) > 1 and t[-2] in units:
        t = t[:-1]
    try:
        if t and t[-1] in units:
            n = int(float(t[:-1]) * units[t[-1]])
        else:
            n = int(t)
    except ValueError:
        raise argparse.ArgumentTypeError("not a size: %r" % text)
    if n <= 0:
        raise argparse.ArgumentTypeError("size must be positive: %r" % text)
    return n


def shards_of(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d != ".prefetchfs")
                for n in sorted(names):
                    if n.endswith(".tar"):
                        yield os.path.join(root, n)
        else:
            yield p


def sample_key(name):
    """WebDataset's key: the member path up to the first dot of its file name."""
    d, base = os.path.split(name)
    return os.path.join(d, base.split(".", 1)[0])


def samples_of(path):
    """Yield (key, {extension: bytes}) for each sample of one shard."""
    # a large buffer: tarfile asks for 10 KiB records, the file object
    # turns them into 1 MiB read()s
    with open(path, "rb", buffering=1 << 20) as f, \
            tarfile.open(fileobj=f, mode="r|") as tar:
        key, parts = None, {}
        for m in tar:
            if not m.isfile():
                continue
            k = sample_key(m.name)
            if k != key and parts:
                yield key, parts
                parts = {}
            key = k
            ext = os.path.basename(m.name)[len(os.path.basename(k)) + 1:]
            parts[ext] = tar.extractfile(m).read()
        if parts:
            yield key, parts


def make(d, nshards, nsamples, sample_size):
    os.makedirs(d, exist_ok=True)
    rng = random.Random(42)
    for s in range(nshards):
        path = os.path.join(d, "shard-%06d.tar" % s)
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(nsamples):
                key = "%06d" % (s * nsamples + i)
                cls = rng.randrange(1000)
                for ext, data in (("bin", rng.randbytes(sample_size)),
                                  ("cls", b"%d\n" % cls),
                                  ("json", json.dumps({"key": key, "label": cls}).encode())):
                    ti = tarfile.TarInfo("%s.%s" % (key, ext))
                    ti.size = len(data)
                    ti.mtime = 1700000000
                    tar.addfile(ti, _Bytes(data))
    print("made %d shards of %d samples in %s" % (nshards, nsamples, d))


class _Bytes:
    """A minimal file object over bytes for TarFile.addfile."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def read(self, n=-1):
        if n < 0:
            n = len(self.data) - self.pos
        b = self.data[self.pos:self.pos + n]
        self.pos += len(b)
        return b


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("paths", nargs="*", help="tar shards to stream")
    ap.add_argument("--batch", type=int, default=32, help="samples per batch")
    ap.add_argument("--compute-ms", type=float, default=40.0,
                    help="simulated compute per batch, ms")
    ap.add_argument("--epochs", type=int, default=1,
                    help="passes over the shards")
    ap.add_argument("--checksum", action="store_true",
                    help="print sha256= over the samples in order")
    ap.add_argument("--make", metavar="DIR", help="write sample shards into DIR and exit")
    ap.add_argument("--shards", type=int, default=8, help="--make: shards")
    ap.add_argument("--samples", type=int, default=256,
                    help="--make: samples per shard")
    ap.add_argument("--sample-size", type=size, default="64K",
                    help="--make: bytes of each sample's .bin")
    a = ap.parse_args()

    if a.make:
        if a.paths:
            ap.error("--make takes a directory and no PATH")
        if a.shards <= 0 or a.samples <= 0:
            ap.error("--shards and --samples must be positive")
        try:
            make(a.make, a.shards, a.samples, a.sample_size)
        except OSError as e:
            sys.exit("tar_shards.py: %s" % e)
        return 0
    if not a.paths:
        ap.error("a shard or a directory of shards (or --make DIR) is needed")
    if a.batch <= 0 or a.epochs <= 0 or a.compute_ms < 0:
        ap.error("--batch and --epochs must be positive, --compute-ms not negative")
    for p in a.paths:
        if not os.path.exists(p):
            ap.error("no such file or directory: %s" % p)
    shards = list(shards_of(a.paths))
    if not shards:
        ap.error("no .tar shard in %s" % " ".join(a.paths))

    sha = hashlib.sha256()
    nshards = samples = batches = nbytes = 0
    inbatch = 0
    compute = 0.0
    t0 = time.monotonic()
    try:
        for _ in range(a.epochs):
            for path in shards:
                nshards += 1
                for key, parts in samples_of(path):
                    samples += 1
                    for ext in sorted(parts):
                        nbytes += len(parts[ext])
                        if a.checksum:
                            sha.update(b"%s.%s:%d:" % (key.encode(), ext.encode(),
                                                        len(parts[ext])))
                            sha.update(parts[ext])
                    inbatch += 1
                    if inbatch == a.batch:
                        inbatch = 0
                        batches += 1
                        c0 = time.monotonic()
                        time.sleep(a.compute_ms / 1000.0)
                        compute += time.monotonic() - c0
        if inbatch:     # the last, partial batch
            batches += 1
            c0 = time.monotonic()
            time.sleep(a.compute_ms / 1000.0)
            compute += time.monotonic() - c0
    except (OSError, tarfile.TarError) as e:
        sys.exit("tar_shards.py: %s: %s" % (path, e))
    wall = time.monotonic() - t0
    wait = wall - compute
    line = ("shards=%d samples=%d batches=%d bytes=%d wall_s=%.3f compute_s=%.3f "
            "data_wait_pct=%.1f samples_s=%.0f mb_s=%.1f" % (
                nshards, samples, batches, nbytes, wall, compute,
                100.0 * wait / wall if wall else 0,
                samples / wall if wall else 0, nbytes / wall / 1e6 if wall else 0))
    if a.checksum:
        line += " sha256=%s" % sha.hexdigest()
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
