#!/usr/bin/env python3
"""A trainer-shaped reader: read a batch, compute, repeat; prints its data wait.

    python3 examples/simple_trainer.py [--batch 8M] [--compute-ms 40] [--epochs 1] PATH...

PATH is a file or a directory (all files below it, in name order), for
example a prefetchfs mountpoint:

    prefetchfs /nfs/datasets/shards /mnt/shards
    python3 examples/simple_trainer.py /mnt/shards

Each file is read sequentially in batches of --batch bytes with ordinary
read() calls; after each batch the trainer "computes" (sleeps) for
--compute-ms.  data wait % = time not computing / wall time: the share of
the run the accelerator would sit idle waiting for data.  Standard library
only.
"""
import argparse
import os
import sys
import time


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("IB").rstrip("B") if text[-1:].isalpha() else text
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def files_of(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d != ".prefetchfs")
                for n in sorted(names):
                    yield os.path.join(root, n)
        else:
            yield p


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("paths", nargs="+", help="files to read, in order")
    ap.add_argument("--batch", type=size, default="8M",
                    help="bytes read per step")
    ap.add_argument("--compute-ms", type=float, default=40.0,
                    help="simulated compute per step, ms")
    ap.add_argument("--epochs", type=int, default=1,
                    help="passes over the files")
    ap.add_argument("--record", type=size, default="64K",
                    help="bytes per sample, for samples/s")
    a = ap.parse_args()

    nbytes = batches = 0
    compute = 0.0
    t0 = time.monotonic()
    for _ in range(a.epochs):
        for path in files_of(a.paths):
            with open(path, "rb", buffering=0) as f:
                while True:
                    data = f.read(a.batch)
                    if not data:
                        break
                    nbytes += len(data)
                    batches += 1
                    c0 = time.monotonic()
                    time.sleep(a.compute_ms / 1000.0)
                    compute += time.monotonic() - c0
    wall = time.monotonic() - t0
    wait = wall - compute
    print("batches=%d bytes=%d wall_s=%.3f compute_s=%.3f data_wait_pct=%.1f "
          "samples_s=%.0f mb_s=%.1f" % (
              batches, nbytes, wall, compute, 100.0 * wait / wall if wall else 0,
              nbytes / a.record / wall if wall else 0, nbytes / wall / 1e6 if wall else 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
