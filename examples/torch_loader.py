#!/usr/bin/python3
"""A PyTorch DataLoader over fixed-size records in shard files; prints its data wait.

    /usr/bin/python3 examples/torch_loader.py [--record 64K] [--batch 64]
        [--workers 4] [--compute-ms 40] [--epochs 1] [--shuffle]
        [--hints [--mountpoint DIR]] PATH...

PATH is a shard file or a directory (all files below it, in name order),
for example a prefetchfs mountpoint:

    prefetchfs /nfs/datasets/shards /mnt/shards
    /usr/bin/python3 examples/torch_loader.py --workers 4 /mnt/shards

Needs PyTorch: on Debian 12 `apt-get install python3-torch`, which only the
system interpreter /usr/bin/python3 imports (a pyenv or venv `python3` on
PATH does not see Debian's packages).

The dataset is map-style: sample i is the i-th --record bytes of the shards
taken one after the other (a shard's trailing partial record is not used),
read with os.pread by whichever DataLoader worker gets it.  Without
--shuffle the sampler is sequential, so each worker reads whole batches of
consecutive records: the access pattern prefetchfs learns and reads ahead
of.  With --shuffle every record is a random read (prefetchfs then does no
read-ahead, by design) unless --hints declares the order: then the sampler
is wrapped in prefetchfs_hints.HintedSampler, which writes each epoch's
order to DIR/.prefetchfs/plan (DIR defaults to the mountpoint holding
the first PATH) and prefetchfs fetches the records ahead in that
order.  After each batch the loop "computes" (sleeps) for --compute-ms, as
a GPU step would.

Output, one line of key=value pairs (as examples/simple_trainer.py):
data_wait_pct = (wall - compute) / wall, the share of the run the
accelerator would sit idle waiting for data.  With --checksum it also
prints digest=, a sum of per-record hashes that does not depend on the
order the records were read in (compare a run on the mount with one on
the source directory).
"""
import argparse
import hashlib
import os
import sys
import time

try:
    import torch
    from torch.utils.data import (DataLoader, Dataset, RandomSampler,
                                  SequentialSampler)
except ImportError as e:
    sys.exit("torch_loader.py: cannot import torch (%s): install python3-torch "
             "and run with /usr/bin/python3" % e)

DIGEST_MASK = (1 << 62) - 1


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


def files_of(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d != ".prefetchfs")
                for n in sorted(names):
                    yield os.path.join(root, n)
        else:
            yield p


def record_hash(data):
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(),
                          "little") & DIGEST_MASK


class ShardRecords(Dataset):
    """Record i of the shards, read with os.pread.

    Only names and sizes are kept in the object, so that it pickles
    cheaply to the workers; each process opens the shards it reads from
    on first use (a descriptor opened before the fork would be shared by
    all workers).
    """

    def __init__(self, paths, record, checksum, random=False):
        self.record = record
        self.checksum = checksum
        self.files = []     # (path, first record index, records)
        first = 0
        for p in files_of(paths):
            n = os.path.getsize(p) // record
            if n:
                self.files.append((p, first, n))
                first += n
        self.len = first
        self.fds = {}
        self.pid = None
        self.random = random

    def __len__(self):
        return self.len

    def _fd(self, path):
        if self.pid != os.getpid():
            self.fds = {}
            self.pid = os.getpid()
        fd = self.fds.get(path)
        if fd is None:
            fd = os.open(path, os.O_RDONLY)
            if self.random:
                # shuffled records: the kernel's read-ahead around each
                # one would only read bytes no sample uses
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            self.fds[path] = fd
        return fd

    def locate(self, i):
        """(path, offset, length) of record i."""
        if i < 0 or i >= self.len:
            raise IndexError(i)
        lo, hi = 0, len(self.files)
        while hi - lo > 1:          # the shard holding record i
            mid = (lo + hi) // 2
            if self.files[mid][1] <= i:
                lo = mid
            else:
                hi = mid
        path, first, _ = self.files[lo]
        return path, (i - first) * self.record, self.record

    def __getitem__(self, i):
        path, off, _ = self.locate(i)
        fd = self._fd(path)
        buf = bytearray()
        while len(buf) < self.record:
            b = os.pread(fd, self.record - len(buf), off + len(buf))
            if not b:
                raise IOError("%s: short read at offset %d" % (path, off))
            buf += b
        x = torch.frombuffer(buf, dtype=torch.uint8)
        if self.checksum:
            return x, record_hash(buf)
        return x


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("paths", nargs="+", help="shards of fixed-size records")
    ap.add_argument("--record", type=size, default="64K",
                    help="bytes per sample")
    ap.add_argument("--batch", type=int, default=64,
                    help="samples per batch")
    ap.add_argument("--workers", type=int, default=min(4, len(os.sched_getaffinity(0))),
                    help="DataLoader worker processes: 4, or the CPUs if fewer;"
                    " 0 reads in the loop")
    ap.add_argument("--compute-ms", type=float, default=40.0,
                    help="simulated compute per batch, ms")
    ap.add_argument("--epochs", type=int, default=1,
                    help="passes over the shards")
    ap.add_argument("--shuffle", action="store_true",
                    help="random record order (random reads)")
    ap.add_argument("--seed", type=int, default=0, help="shuffle seed")
    ap.add_argument("--checksum", action="store_true",
                    help="print digest= over every record read")
    ap.add_argument("--hints", action="store_true",
                    help="declare each epoch's order to the prefetchfs mount")
    ap.add_argument("--mountpoint", metavar="DIR",
                    help="the mount --hints declares to (default: the"
                    " mountpoint holding the first PATH)")
    a = ap.parse_args()
    if a.batch <= 0 or a.workers < 0 or a.epochs <= 0 or a.compute_ms < 0:
        ap.error("--batch and --epochs must be positive, --workers and --compute-ms not negative")
    for p in a.paths:
        if not os.path.exists(p):
            ap.error("no such file or directory: %s" % p)

    ds = ShardRecords(a.paths, a.record, a.checksum, random=a.shuffle)
    if len(ds) == 0:
        ap.error("no file holds a whole record of %d bytes" % a.record)
    gen = torch.Generator()
    gen.manual_seed(a.seed)
    sampler = None
    if a.hints:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from prefetchfs_hints import HintedSampler, mount_root
        mnt = a.mountpoint or mount_root(a.paths[0])
        sampler = HintedSampler(RandomSampler(ds, generator=gen) if a.shuffle
                                else SequentialSampler(ds), ds.locate, mnt)
    loader = DataLoader(ds, batch_size=a.batch,
                        shuffle=a.shuffle if sampler is None else None,
                        sampler=sampler, num_workers=a.workers, generator=gen,
                        persistent_workers=a.workers > 0)

    samples = batches = digest = 0
    compute = 0.0
    t0 = time.monotonic()
    try:
        for _ in range(a.epochs):
            for b in loader:
                if a.checksum:
                    x, h = b
                    digest = (digest + int(h.sum())) & ((1 << 64) - 1)
                else:
                    x = b
                samples += x.shape[0]
                batches += 1
                c0 = time.monotonic()
                time.sleep(a.compute_ms / 1000.0)
                compute += time.monotonic() - c0
    except OSError as e:
        # a worker's error arrives with the worker's traceback: keep its
        # last line, the error itself
        msg = str(e).strip().splitlines()
        sys.exit("torch_loader.py: %s" % (msg[-1] if msg else e))
    wall = time.monotonic() - t0
    nbytes = samples * a.record
    wait = wall - compute
    line = ("batches=%d samples=%d bytes=%d wall_s=%.3f compute_s=%.3f "
            "data_wait_pct=%.1f samples_s=%.0f mb_s=%.1f" % (
                batches, samples, nbytes, wall, compute,
                100.0 * wait / wall if wall else 0,
                samples / wall if wall else 0, nbytes / wall / 1e6 if wall else 0))
    if a.checksum:
        line += " digest=%016x" % digest
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
