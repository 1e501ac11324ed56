#!/usr/bin/python3
"""N readers, each reading its own directory of ROOT in name order; prints their data wait.

    bench/inorder.py [--every 8] [--compute-ms 40] ROOT

Each subdirectory of ROOT gets one reader process (fork): it lists its
directory, then opens, reads whole (1 MiB read()s) and closes each file in
name order, and "computes" (sleeps) --compute-ms after every --every
files.  The start of such readers (the listing, the first opens, learning
the order) is what a mount adds to a local copy's wall time.

Output, one line: data_wait_pct (mean of the readers': (wall - compute) /
wall), each reader's, wall_s (the slowest), then per reader list_ms,
open_ms, read_ms and first_ms (its first file's open and read).
"""
import argparse
import multiprocessing as mp
import os
import time


def reader(d, every, compute, q):
    t0 = time.monotonic()
    names = sorted(os.listdir(d))
    listed = time.monotonic() - t0
    comp = opens = reads = first = 0.0
    for i, n in enumerate(names):
        a = time.monotonic()
        with open(os.path.join(d, n), "rb") as f:
            b = time.monotonic()
            while f.read(1 << 20):
                pass
        c = time.monotonic()
        opens += b - a
        reads += c - b
        if i == 0:
            first = c - a
        if i % every == every - 1:
            s = time.monotonic()
            time.sleep(compute)
            comp += time.monotonic() - s
    q.put((time.monotonic() - t0, comp, listed, opens, reads, first))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--every", type=int, default=8, help="files between computes")
    ap.add_argument("--compute-ms", type=float, default=40.0)
    a = ap.parse_args()
    dirs = sorted(os.path.join(a.root, d) for d in os.listdir(a.root))
    q = mp.Queue()
    ps = [mp.Process(target=reader, args=(d, a.every, a.compute_ms / 1000, q)) for d in dirs]
    for p in ps:
        p.start()
    res = [q.get() for _ in ps]
    for p in ps:
        p.join()
    w = [100 * (r[0] - r[1]) / r[0] for r in res]
    ms = lambda k: "/".join("%.0f" % (r[k] * 1000) for r in res)
    print("data_wait_pct=%.1f each=%s wall_s=%.2f list_ms=%s open_ms=%s read_ms=%s first_ms=%s" % (
        sum(w) / len(w), "/".join("%.1f" % x for x in w), max(r[0] for r in res),
        ms(2), ms(3), ms(4), ms(5)))


if __name__ == "__main__":
    main()
