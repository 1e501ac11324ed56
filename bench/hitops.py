#!/usr/bin/env python3
# bench/hitops.py DIR [keep] - the cost of each request of one file read
# whole (open, Python's isatty, one read of 256 KiB, close) for every file
# of DIR in name order, in ms a file.  Without "keep", the page cache of
# each file is dropped first (posix_fadvise DONTNEED), so on a prefetchfs
# mount whose memory holds the files every read is a READ answered from
# memory; "keep" for the local copy (its page cache is the floor).
#
#   ./prefetchfs SRC MNT && cat MNT/* >/dev/null && bench/hitops.py MNT
#   bench/hitops.py SRC keep
import os
import sys
import time

d = sys.argv[1]
paths = [os.path.join(d, n) for n in sorted(os.listdir(d))]
if len(sys.argv) < 3:
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
t_open = t_tty = t_read = t_close = 0.0
pc = time.perf_counter
for p in paths:
    a = pc()
    fd = os.open(p, os.O_RDONLY)
    b = pc()
    os.isatty(fd)
    c = pc()
    os.read(fd, 262144)
    e = pc()
    os.close(fd)
    f = pc()
    t_open += b - a
    t_tty += c - b
    t_read += e - c
    t_close += f - e
n = len(paths) / 1000.0
print("open %.3f isatty %.3f read %.3f close %.3f ms a file" %
      (t_open / n, t_tty / n, t_read / n, t_close / n))
