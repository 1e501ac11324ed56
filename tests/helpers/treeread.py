#!/usr/bin/env python3
"""treeread - reads files of a tree through a mount and checks every byte.

  treeread.py [--pause MS] [--shuffle SEED] [--count N] MNT SRC REL...

Opens each file REL under MNT, reads it whole, compares it with the same
path under SRC, closes it, then sleeps MS milliseconds (default 0): a
reader going through the files of a dataset one at a time.  The files go
in the order given, or, with --shuffle SEED, in the order
random.Random(SEED).shuffle() puts their sorted names in (the same SEED
and names: the same order, so a second run can read what a first one
did); --count N reads only the first N of that order.

Prints each file whose bytes differ (and goes on); exits 1 if any did, 0
otherwise.  Used by tests/mount_dirahead.sh and tests/mount_diskfill.sh.
"""
import argparse
import os
import random
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pause", type=float, default=0, metavar="MS")
    ap.add_argument("--shuffle", type=int, metavar="SEED")
    ap.add_argument("--count", type=int, metavar="N")
    ap.add_argument("mnt")
    ap.add_argument("src")
    ap.add_argument("rel", nargs="+")
    a = ap.parse_args()
    names = a.rel
    if a.shuffle is not None:
        names = sorted(names)
        random.Random(a.shuffle).shuffle(names)
    if a.count is not None:
        names = names[:a.count]
    bad = 0
    for rel in names:
        with open(os.path.join(a.mnt, rel), "rb") as f:
            got = f.read()
        with open(os.path.join(a.src, rel), "rb") as f:
            want = f.read()
        if got != want:
            print("wrong bytes in", rel, len(got), len(want))
            bad += 1
        time.sleep(a.pause / 1000)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
