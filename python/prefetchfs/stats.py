"""The live counters of a prefetchfs mount, as Python sees them.

Every mount serves its counters as JSON in ROOT/.prefetchfs/stats (what
`prefetchfs-stat --json` prints); each read of the file is a fresh
snapshot.  stats(path) reads it from the mount serving path and returns
a Stats: the parsed JSON (a dict, every field as the daemon wrote it)
with a few properties for the questions a training script asks:

    s = prefetchfs.stats("/mnt/imagenet/train")
    print(s.hit_rate, s.wait_s, s.bytes_served)
    before = prefetchfs.stats(mnt)
    ...one epoch...
    print(prefetchfs.stats(mnt).since(before))   # that epoch's totals

The fields themselves are described in prefetchfs(8) (STATISTICS); a
field an older daemon does not write reads as 0 (or empty) through the
properties, never as an error.
"""
import json
import os

from .mount import CONTROL_DIR, find_root

__all__ = ["stats", "Stats"]


def stats(path):
    """The counters of the prefetchfs mount serving path, as a Stats.

    path: the mount point, or any path under it.  Raises
    prefetchfs.NotAMountError if no mount serves it, ValueError if the
    file does not parse (a daemon bug: report it).
    """
    root = find_root(path, "stats")
    with open(os.path.join(root, CONTROL_DIR, "stats"), "rb") as f:
        raw = f.read()
    s = Stats(json.loads(raw.decode("utf-8")))
    s.root = root
    return s


def _num(d, key):
    v = d.get(key, 0) if isinstance(d, dict) else 0
    return v if isinstance(v, (int, float)) else 0


class Stats(dict):
    """The stats file's JSON (a dict) with read-only accessors.

    root          the mount's root directory the stats came from
    totals        the "totals" object (reads, hits, waits, bytes_*...)
    reads, hits, waits
                  READ requests; those served from memory at once; those
                  that waited for a fetch
    hit_rate      hits / reads (0.0 to 1.0), None before the first READ
    wait_s        seconds READs spent waiting for the source, summed
    bytes_served, bytes_fetched, bytes_prefetched
                  bytes the mount returned; read from the source; of
                  those, fetched ahead of the reads
    memory_used, memory_max
                  bytes of the block cache in use and its limit
                  (max_memory)
    disk_cache    the disk cache's counters (cache_dir=), {} without one
    plans         the declared orders being followed (HintedSampler),
                  one dict each: entries, read_planned, state, why...
    plans_ended   the counts of plans that ended (closed or replaced)
    warnings      the daemon's warnings that cost an order of magnitude
    since(earlier)
                  the totals of this snapshot minus those of an earlier
                  one: what happened in between
    """

    root = None

    @property
    def totals(self):
        t = self.get("totals")
        return t if isinstance(t, dict) else {}

    @property
    def reads(self):
        return _num(self.totals, "reads")

    @property
    def hits(self):
        return _num(self.totals, "hits")

    @property
    def waits(self):
        return _num(self.totals, "waits")

    @property
    def hit_rate(self):
        return self.hits / self.reads if self.reads else None

    @property
    def wait_s(self):
        return _num(self.totals, "wait_ms") / 1000.0

    @property
    def bytes_served(self):
        return _num(self.totals, "bytes_served")

    @property
    def bytes_fetched(self):
        return _num(self.totals, "bytes_fetched")

    @property
    def bytes_prefetched(self):
        return _num(self.totals, "bytes_prefetched")

    @property
    def memory_used(self):
        return _num(self.totals, "memory_used")

    @property
    def memory_max(self):
        return _num(self.totals, "memory_max")

    @property
    def disk_cache(self):
        tr = self.get("transport")
        dc = tr.get("disk_cache") if isinstance(tr, dict) else None
        return dc if isinstance(dc, dict) else {}

    @property
    def plans(self):
        p = self.get("plans")
        return p if isinstance(p, list) else []

    @property
    def plans_ended(self):
        p = self.get("plans_ended")
        return p if isinstance(p, dict) else {}

    @property
    def warnings(self):
        w = self.get("warnings")
        return w if isinstance(w, list) else []

    def since(self, earlier):
        """{name: this - earlier} for every numeric field of totals
        (counters; gauges such as memory_used come out as changes)."""
        old = earlier.totals if isinstance(earlier, Stats) else \
            (earlier or {}).get("totals", {})
        return {k: v - _num(old, k) for k, v in self.totals.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}
