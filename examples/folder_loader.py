#!/usr/bin/python3
"""An ImageFolder-style PyTorch trainer over a tree of sample files; prints its data wait per epoch.

    /usr/bin/python3 examples/folder_loader.py [--batch 32] [--workers 4]
        [--compute-ms 50] [--epochs 1] [--seed 0] [--checksum]
        [--hints] [--mountpoint DIR] [--in-order]
        [--rank R --world-size N] ROOT

ROOT holds one directory per class (the ImageFolder layout: ROOT/CLASS/
SAMPLE, one file per sample, for example a prefetchfs mountpoint):

    prefetchfs http://store/imagenet/train/ /mnt/train
    /usr/bin/python3 examples/folder_loader.py --workers 4 /mnt/train

Needs PyTorch: on Debian 12 `apt-get install python3-torch`, which only the
system interpreter /usr/bin/python3 imports.

Each sample is one whole file, opened and read by whichever DataLoader
worker gets it.  By default the order is a torch DataLoader with
shuffle=True: a new random permutation of all the files every epoch, the
most common training layout.  After each batch the loop "computes"
(sleeps) for --compute-ms, as a GPU step would.

--rank R --world-size N: this process is rank R of N (a node of a
cluster): a DistributedSampler gives it its share of each epoch's
permutation, the ranks' shares disjoint, a new permutation (the same on
every rank, from --seed and the epoch) every epoch.

--in-order: worker w reads the class directories w, w+N, w+2N, ... (N =
--workers), each one's files in name order, in batches of its own (an
IterableDataset): N readers each on its own directory.

--hints: the sampler is wrapped with prefetchfs_hints.HintedSampler (the
module next to this file), which writes each epoch's order to the mount's
plan file before the first batch, so that prefetchfs can fetch ahead in
that order.  locate(i) gives the sample's absolute path, under
--mountpoint (default: the mount point that holds ROOT).  With
--world-size, each rank declares its own share of the epoch to its
node's mount.

Output, one line of key=value pairs per epoch: epoch, batches, samples,
bytes, wall_s, compute_s, data_wait_pct = (wall - compute) / wall (the
share of the epoch the accelerator would sit idle waiting for data, as in
examples/torch_loader.py), samples_s, mb_s (10^6 bytes/s).  The first
epoch's wall includes starting the workers.  With --checksum also digest=,
a sum of per-file hashes that does not depend on the order (compare a run
on the mount with one on the source tree).

--after-epoch CMD runs the shell command CMD after each epoch's line, with
EPOCH=n in its environment, before the next epoch starts and outside its
timing (a benchmark reads its counters there).
"""
import argparse
import hashlib
import os
import subprocess
import sys
import time

try:
    import torch
    from torch.utils.data import DataLoader, Dataset, IterableDataset
    from torch.utils.data import RandomSampler, get_worker_info
    from torch.utils.data.distributed import DistributedSampler
except ImportError as e:
    sys.exit("folder_loader.py: cannot import torch (%s): install python3-torch "
             "and run with /usr/bin/python3" % e)

DIGEST_MASK = (1 << 62) - 1


def file_hash(data):
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(),
                          "little") & DIGEST_MASK


def scan_tree(root):
    """[(class name, [file paths in name order])], classes in name order."""
    classes = []
    for c in sorted(os.listdir(root)):
        d = os.path.join(root, c)
        if c.startswith(".") or not os.path.isdir(d):
            continue
        files = [os.path.join(d, n) for n in sorted(os.listdir(d))
                 if os.path.isfile(os.path.join(d, n))]
        if files:
            classes.append((c, files))
    return classes


def read_file(path):
    with open(path, "rb", buffering=0) as f:
        return f.read()


def sample(path, label, checksum):
    data = read_file(path)
    return (torch.frombuffer(bytearray(data), dtype=torch.uint8), label,
            file_hash(data) if checksum else 0)


def collate(items):
    """A batch: all samples' bytes in one tensor, their labels, hash sum.

    Samples differ in size, so the default collate (which stacks) cannot
    be used; one flat tensor also crosses from the worker in one piece."""
    data = torch.cat([x for x, _, _ in items]) if items else torch.empty(0)
    labels = torch.tensor([y for _, y, _ in items], dtype=torch.int64)
    digest = sum(h for _, _, h in items) & ((1 << 64) - 1)
    return data, labels, digest


class FolderSamples(Dataset):
    """Sample i: the i-th file of the tree (classes, then names, in order)."""

    def __init__(self, classes, checksum):
        self.samples = [(p, label) for label, (_, files) in enumerate(classes)
                        for p in files]
        self.checksum = checksum

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        return sample(path, label, self.checksum)


class InOrderDirs(IterableDataset):
    """Each worker reads its own class directories, files in name order."""

    def __init__(self, classes, checksum, batch):
        self.classes = classes
        self.checksum = checksum
        self.batch = batch

    def __iter__(self):
        info = get_worker_info()
        w, n = (info.id, info.num_workers) if info else (0, 1)
        items = []
        for label in range(w, len(self.classes), n):
            for p in self.classes[label][1]:
                items.append(sample(p, label, self.checksum))
                if len(items) == self.batch:
                    yield collate(items)
                    items = []
        if items:
            yield collate(items)


def mount_of(path):
    p = os.path.abspath(path)
    while not os.path.ismount(p):
        p = os.path.dirname(p)
    return p


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("root", help="the tree: ROOT/CLASS/SAMPLE")
    ap.add_argument("--batch", type=int, default=32, help="samples per batch")
    ap.add_argument("--workers", type=int,
                    default=min(4, len(os.sched_getaffinity(0))),
                    help="DataLoader worker processes (0 reads in the loop)")
    ap.add_argument("--compute-ms", type=float, default=50.0,
                    help="simulated compute per batch")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0, help="shuffle seed")
    ap.add_argument("--checksum", action="store_true",
                    help="print digest= over every file read")
    ap.add_argument("--in-order", action="store_true",
                    help="worker w reads its own class directories in name order"
                    " (no shuffling)")
    ap.add_argument("--hints", action="store_true",
                    help="declare each epoch's order to prefetchfs"
                    " (examples/prefetchfs_hints.py)")
    ap.add_argument("--mountpoint", default=None,
                    help="--hints: the prefetchfs mount point"
                    " (default: the mount point holding ROOT)")
    ap.add_argument("--rank", type=int, default=0,
                    help="this rank of --world-size (DistributedSampler)")
    ap.add_argument("--world-size", type=int, default=1,
                    help="ranks sharing each epoch; more than 1: each reads"
                    " its own share of the permutation")
    ap.add_argument("--after-epoch", metavar="CMD", default=None,
                    help="shell command run after each epoch (EPOCH=n set)")
    a = ap.parse_args()
    if a.batch <= 0 or a.workers < 0 or a.epochs <= 0 or a.compute_ms < 0:
        ap.error("--batch and --epochs must be positive, --workers and"
                 " --compute-ms not negative")
    if a.hints and a.in_order:
        ap.error("--hints declares a shuffled order: not with --in-order")
    if a.world_size < 1 or not 0 <= a.rank < a.world_size:
        ap.error("--rank must be from 0 to --world-size - 1")
    if a.world_size > 1 and a.in_order:
        ap.error("--world-size: not with --in-order")
    if not os.path.isdir(a.root):
        ap.error("not a directory: %s" % a.root)

    classes = scan_tree(a.root)
    if not classes:
        ap.error("no class directory with files under %s" % a.root)
    gen = torch.Generator()
    gen.manual_seed(a.seed)
    if a.in_order:
        ds = InOrderDirs(classes, a.checksum, a.batch)
        loader = DataLoader(ds, batch_size=None, num_workers=a.workers,
                            persistent_workers=a.workers > 0)
    else:
        ds = FolderSamples(classes, a.checksum)
        if a.world_size > 1:
            sampler = DistributedSampler(ds, num_replicas=a.world_size,
                                         rank=a.rank, shuffle=True,
                                         seed=a.seed)
        else:
            sampler = RandomSampler(ds, generator=gen)
        if a.hints:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            try:
                from prefetchfs_hints import HintedSampler
            except ImportError as e:
                sys.exit("folder_loader.py: --hints needs examples/prefetchfs_hints.py"
                         " (%s)" % e)
            mnt = os.path.abspath(a.mountpoint or mount_of(a.root))
            paths = [os.path.abspath(p) for p, _ in ds.samples]
            sampler = HintedSampler(sampler, paths.__getitem__, mnt)
        loader = DataLoader(ds, batch_size=a.batch, sampler=sampler,
                            num_workers=a.workers, collate_fn=collate,
                            persistent_workers=a.workers > 0)

    try:
        for epoch in range(1, a.epochs + 1):
            if a.world_size > 1:
                sampler.set_epoch(epoch)
            samples = batches = nbytes = digest = 0
            compute = 0.0
            t0 = time.monotonic()
            for data, labels, h in loader:
                digest = (digest + h) & ((1 << 64) - 1)
                samples += labels.shape[0]
                nbytes += data.shape[0]
                batches += 1
                c0 = time.monotonic()
                time.sleep(a.compute_ms / 1000.0)
                compute += time.monotonic() - c0
            wall = time.monotonic() - t0
            line = ("epoch=%d batches=%d samples=%d bytes=%d wall_s=%.3f "
                    "compute_s=%.3f data_wait_pct=%.1f samples_s=%.0f mb_s=%.1f" % (
                        epoch, batches, samples, nbytes, wall, compute,
                        100.0 * (wall - compute) / wall if wall else 0,
                        samples / wall if wall else 0,
                        nbytes / wall / 1e6 if wall else 0))
            if a.checksum:
                line += " digest=%016x" % digest
            print(line, flush=True)
            if a.after_epoch:
                subprocess.run(a.after_epoch, shell=True,
                               env=dict(os.environ, EPOCH=str(epoch), RANK=str(a.rank)))
    except OSError as e:
        # a worker's error arrives with the worker's traceback: keep its
        # last line, the error itself
        msg = str(e).strip().splitlines()
        sys.exit("folder_loader.py: %s" % (msg[-1] if msg else e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
