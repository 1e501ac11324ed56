#!/usr/bin/python3
"""Make an ImageFolder-style tree: NFILES files of SIZE bytes in CLASSES class directories.

    bench/mktree.py [--classes 10] [--seed 0] DIR NFILES SIZE

Writes DIR/class-00/sample-000000.bin ... : file k (0 <= k < NFILES) goes
to class k % CLASSES, so the classes differ by one file at most.  SIZE
takes K, M, G suffixes (binary multiples).  Content: random.Random(seed *
2^32 + k).randbytes(SIZE), deterministic and incompressible; the same
arguments make the same tree byte for byte.  Prints "files=N bytes=B".
"""
import argparse
import os
import random
import sys


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    try:
        n = int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except ValueError:
        raise argparse.ArgumentTypeError("not a size: %r" % text)
    if n < 0:
        raise argparse.ArgumentTypeError("size must not be negative: %r" % text)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("nfiles", type=int)
    ap.add_argument("size", type=size)
    ap.add_argument("--classes", type=int, default=10, help="class directories")
    ap.add_argument("--seed", type=int, default=0, help="content seed")
    ap.add_argument("--prefix", default="class-", help="class directory name prefix")
    a = ap.parse_args()
    if a.nfiles < 0 or a.classes <= 0:
        ap.error("NFILES must not be negative, --classes must be positive")
    for c in range(min(a.classes, a.nfiles)):
        os.makedirs(os.path.join(a.dir, "%s%02d" % (a.prefix, c)), exist_ok=True)
    for k in range(a.nfiles):
        p = os.path.join(a.dir, "%s%02d" % (a.prefix, k % a.classes), "sample-%06d.bin" % k)
        with open(p, "wb") as f:
            f.write(random.Random((a.seed << 32) + k).randbytes(a.size))
    print("files=%d bytes=%d" % (a.nfiles, a.nfiles * a.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
