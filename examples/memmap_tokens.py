#!/usr/bin/python3
"""A numpy memmap token stream, as small GPT training scripts read one; prints its data wait.

    /usr/bin/python3 examples/memmap_tokens.py [--mode sequential|random]
        [--block-size 1024] [--batch 12] [--compute-ms 40] [--steps 0]
        [--seconds 0] [--check SOURCE] FILE
    /usr/bin/python3 examples/memmap_tokens.py --make FILE SIZE

FILE is a flat file of uint16 tokens (nanoGPT's train.bin), for example on
a prefetchfs mountpoint:

    /usr/bin/python3 examples/memmap_tokens.py --make /data/train.bin 256M
    prefetchfs /data /mnt/data
    /usr/bin/python3 examples/memmap_tokens.py /mnt/data/train.bin

Needs numpy (Debian: python3-numpy, imported by /usr/bin/python3).

Each step maps FILE with np.memmap (anew every step, as nanoGPT's
get_batch does to avoid a memory leak) and copies out --batch rows of
--block-size + 1 tokens (inputs x and targets y shifted by one), so the
data arrives through page faults of the mapping, not read() calls:
  --mode sequential  the next batch x block_size tokens each step, the way
                     a streaming loader walks the file (prefetchfs learns
                     it and reads ahead); --steps 0 is one pass over FILE;
  --mode random      random offsets each step, as nanoGPT samples
                     (random reads: no read-ahead helps); --steps 0 is as
                     many steps as one pass would take.
After each step the loop "computes" (sleeps) for --compute-ms.
--seconds S runs steps until S seconds have passed instead (--steps is
then ignored).

--check SOURCE compares every row with the same tokens read from SOURCE
(the file the mount serves) and fails on a difference; the time it takes
is left out of the figures.  --make writes SIZE bytes of deterministic
pseudo-random tokens (vocabulary 50257, as GPT-2's) to FILE.

Output, one line of key=value pairs (as examples/simple_trainer.py):
data_wait_pct = (wall - compute) / wall; wait_h1_pct and wait_h2_pct are
the same over the steps that started in the first and in the second half
of the run (a cold start against a warm end).
"""
import argparse
import os
import sys
import time

try:
    import numpy as np
except ImportError as e:
    sys.exit("memmap_tokens.py: cannot import numpy (%s): install python3-numpy "
             "and run with /usr/bin/python3" % e)

VOCAB = 50257
TOKEN = 2       # bytes per uint16 token


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


def make(path, nbytes):
    """nbytes (rounded down to whole tokens) of tokens < VOCAB."""
    rng = np.random.default_rng(1234)
    left = nbytes // TOKEN
    with open(path, "wb") as f:
        while left:
            n = min(left, 1 << 22)
            rng.integers(0, VOCAB, n, dtype=np.uint16).tofile(f)
            left -= n
    print("made %s: %d tokens (%d bytes)" % (path, nbytes // TOKEN,
                                            nbytes // TOKEN * TOKEN))


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("file", nargs="?", help="the token file (uint16)")
    ap.add_argument("--make", nargs=2, metavar=("FILE", "SIZE"),
                    help="write a sample token file of SIZE bytes and exit")
    ap.add_argument("--mode", choices=("sequential", "random"), default="sequential",
                    help="read rows in order or at random offsets")
    ap.add_argument("--block-size", type=int, default=1024,
                    help="tokens per row")
    ap.add_argument("--batch", type=int, default=12, help="rows per step")
    ap.add_argument("--compute-ms", type=float, default=40.0,
                    help="simulated compute per step, ms")
    ap.add_argument("--steps", type=int, default=0,
                    help="steps to run; 0: one pass over the file")
    ap.add_argument("--seconds", type=float, default=0,
                    help="run this long instead of --steps (0: --steps)")
    ap.add_argument("--seed", type=int, default=1337, help="random mode's seed")
    ap.add_argument("--check", metavar="SOURCE",
                    help="compare every row with the same tokens of SOURCE")
    a = ap.parse_args()

    if a.make:
        if a.file:
            ap.error("--make takes FILE SIZE and no other file")
        try:
            make(a.make[0], size(a.make[1]))
        except argparse.ArgumentTypeError as e:
            ap.error(str(e))
        except OSError as e:
            sys.exit("memmap_tokens.py: %s" % e)
        return 0
    if not a.file:
        ap.error("a token FILE (or --make FILE SIZE) is needed")
    if a.block_size <= 0 or a.batch <= 0 or a.steps < 0 or a.compute_ms < 0 \
            or a.seconds < 0:
        ap.error("--block-size and --batch must be positive, --steps, "
                 "--seconds and --compute-ms not negative")
    try:
        ntok = os.path.getsize(a.file) // TOKEN
    except OSError as e:
        ap.error(str(e))
    row = a.block_size + 1
    per_step = a.batch * a.block_size
    if ntok < row:
        ap.error("%s holds %d tokens, fewer than one row of %d" % (a.file, ntok, row))
    steps = a.steps or max(1, (ntok - 1) // per_step)
    if a.seconds:
        steps = 1 << 62
    src = None
    if a.check:
        try:
            src = os.open(a.check, os.O_RDONLY)
        except OSError as e:
            ap.error(str(e))
        if os.fstat(src).st_size // TOKEN != ntok:
            ap.error("%s and %s differ in size" % (a.check, a.file))
    rng = np.random.default_rng(a.seed)

    pos = 0
    tokens = nrows = mismatches = 0
    compute = checking = 0.0
    per_step_t = []     # (start, wall, compute) of each step, timed clock
    done = 0
    t0 = time.monotonic()
    try:
        for _ in range(steps):
            s0 = time.monotonic() - t0 - checking
            if a.seconds and s0 >= a.seconds:
                break
            data = np.memmap(a.file, dtype=np.uint16, mode="r")
            if a.mode == "random":
                ix = rng.integers(0, ntok - row + 1, a.batch)
            else:
                if pos + per_step + 1 > ntok:   # wrap: another pass
                    pos = 0
                ix = pos + a.block_size * np.arange(a.batch)
                if ix[-1] + row > ntok:         # a short file: fewer rows
                    ix = ix[ix + row <= ntok]
                pos += len(ix) * a.block_size
            rows = np.stack([data[i:i + row].astype(np.int64) for i in ix])
            x, y = rows[:, :-1], rows[:, 1:]
            tokens += x.size
            nrows += len(ix)
            del data
            if src is not None:
                k0 = time.monotonic()
                for i, r in zip(ix, rows):
                    want = os.pread(src, row * TOKEN, int(i) * TOKEN)
                    if np.frombuffer(want, dtype=np.uint16).astype(np.int64).tobytes() \
                            != r.tobytes():
                        mismatches += 1
                        if mismatches <= 5:
                            print("mismatch: tokens %d..%d differ from %s" % (
                                i, i + row, a.check), file=sys.stderr)
                checking += time.monotonic() - k0
            c0 = time.monotonic()
            time.sleep(a.compute_ms / 1000.0)
            c1 = time.monotonic()
            compute += c1 - c0
            per_step_t.append((s0, c1 - t0 - checking - s0, c1 - c0))
            done += 1
    except OSError as e:
        sys.exit("memmap_tokens.py: %s: %s" % (a.file, e))
    wall = time.monotonic() - t0 - checking
    nbytes = tokens * TOKEN
    wait = wall - compute
    halves = []
    for first in (True, False):
        w = [(sw, sc) for st, sw, sc in per_step_t if (st < wall / 2) == first]
        sw = sum(x[0] for x in w)
        halves.append(100.0 * (sw - sum(x[1] for x in w)) / sw if sw else 0)
    line = ("steps=%d tokens=%d bytes=%d wall_s=%.3f compute_s=%.3f "
            "data_wait_pct=%.1f wait_h1_pct=%.1f wait_h2_pct=%.1f "
            "samples_s=%.0f mb_s=%.1f" % (
                done, tokens, nbytes, wall, compute,
                100.0 * wait / wall if wall else 0, halves[0], halves[1],
                nrows / wall if wall else 0,
                nbytes / wall / 1e6 if wall else 0))
    if src is not None:
        line += " mismatches=%d" % mismatches
    print(line, flush=True)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
