"""Tell a prefetchfs mount the order a PyTorch epoch will read its samples in.

A shuffled epoch is random to the filesystem but not to the trainer: the
sampler knows the whole order before the first batch.  HintedSampler wraps
any sampler (RandomSampler, DistributedSampler, a custom one: it iterates
the real one, nothing is re-implemented), writes the epoch's order to the
mount's control file ROOT/.prefetchfs/plan before yielding the first
index, then yields the very same indices.  prefetchfs fetches the samples
ahead in that order, a little more than the reads consume during one fetch
latency and two batches, and drops them once read.

With an ImageFolder-style dataset (ds.samples[i] is (path, class)), two
lines:

    from prefetchfs import HintedSampler
    loader = DataLoader(ds, batch_size=256, num_workers=8, sampler=HintedSampler(
        RandomSampler(ds), lambda i: ds.samples[i][0], "/mnt/imagenet/train"))

The third argument is the mount point or any directory under it (the
dataset's own directory will do): the mount's root is found from it (see
prefetchfs.find_root).  locate(i) returns the path of sample i (absolute,
or relative to the current directory, under the mount), or (path, offset,
length) when the sample is a record of a bigger file.  With
DistributedSampler call set_epoch() on the HintedSampler (it forwards
it); each rank's sampler declares its own plan.  Works with num_workers >
0: the sampler runs in the main process, the workers only read.

A path under no mount with the control file (an older prefetchfs, or not
a prefetchfs mount at all) gets a warning, once, and the indices
unchanged; so does a plan the mount refuses (see `prefetchfs-stat` and the
daemon's log for the reason).  Samples whose path is not under the mount
or holds a newline are left out of the plan (one warning), never out of
the epoch.

The channel (prefetchfs(8), "declared order"): one line per sample, `PATH`
or `PATH OFFSET LENGTH`, PATH relative to the mount's root; a write at
offset 0 starts a new plan on the open handle, which this class keeps
open across epochs.  A plan holds at most 4 Mi entries and 256 MiB of
text: a longer epoch declares its beginning only.

Needs nothing but the Python standard library (torch only to run a
DataLoader around it).
"""
import errno
import os
import re
import warnings

from .mount import NotAMountError, find_root

__all__ = ["HintedSampler", "CONTROL", "MAX_ENTRIES", "MAX_TEXT"]

CONTROL = os.path.join(".prefetchfs", "plan")
MAX_ENTRIES = 4 << 20           # the mount's limits (PF_HINT_MAX_*)
MAX_TEXT = 256 << 20
CHUNK = 1 << 20                 # bytes per write(); lines may straddle
_RANGE_LIKE = re.compile(rb" [0-9]+ [0-9]+$")


def _flat(order):
    for item in order:
        if isinstance(item, list):      # a BatchSampler's batch
            yield from item
        else:
            yield item


class HintedSampler:
    """A sampler yielding what `sampler` yields, after declaring it.

    sampler: any iterable of indices (or of lists of indices, as a
        BatchSampler), iterated once per epoch.
    locate: i -> path, or (path, offset, length).
    mountpoint: the prefetchfs mount point, or any path under it.

    Attributes: mountpoint (the mount's root found, or the path given
    if none was), declared (entries in the last plan written), left_out
    (samples the last plan could not name).
    """

    def __init__(self, sampler, locate, mountpoint):
        self.sampler = sampler
        self.locate = locate
        self._given = os.path.abspath(os.fspath(mountpoint))
        self._root = None
        self.mountpoint = self._given
        self._fd = None
        self._warned = set()
        self.declared = 0
        self.left_out = 0

    def __len__(self):
        return len(self.sampler)

    def set_epoch(self, epoch):
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self):
        order = list(iter(self.sampler))
        try:
            self._declare(order)
        except OSError as e:
            self._warn("write", "prefetchfs: %s: the plan was not "
                       "declared (%s); reading without hints"
                       % (self._control(), e.strerror or e))
        return iter(order)

    def close(self):
        """Ends the plan (the mount drops what it fetched and nobody read)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self):
        self.close()

    def __getstate__(self):
        # a copy (pickled to another process) opens its own handle
        d = self.__dict__.copy()
        d["_fd"] = None
        return d

    # ---- internals ---------------------------------------------------

    def _control(self):
        return os.path.join(self.mountpoint, CONTROL)

    def _warn(self, key, msg):
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(msg, RuntimeWarning, stacklevel=3)

    def _open(self):
        if self._root is None:
            # found at the first epoch (the mount may come after the
            # sampler), tried again at each until it is
            try:
                self._root = find_root(self._given)
            except NotAMountError as e:
                self._warn("open", "prefetchfs: %s; reading without "
                           "hints" % e)
                return None
            self.mountpoint = self._root
        if self._fd is None:
            try:
                self._fd = os.open(self._control(),
                                   os.O_WRONLY | os.O_CLOEXEC)
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES,
                               errno.EROFS, errno.EPERM, errno.EISDIR):
                    self._warn("open", "prefetchfs: %s: %s: not a "
                               "prefetchfs mount with hints; reading "
                               "without them" % (self._control(),
                                                 e.strerror))
                    return None
                raise
        return self._fd

    def _line(self, i):
        loc = self.locate(i)
        rng = None
        if isinstance(loc, (tuple, list)):
            path, off, length = loc
            off, length = int(off), int(length)
            if off < 0 or length <= 0:
                raise ValueError("locate(%r) gave offset %d length %d"
                                 % (i, off, length))
            rng = b" %d %d" % (off, length)
        else:
            path = loc
        path = os.fsencode(os.path.abspath(os.fspath(path)))
        root = os.fsencode(self.mountpoint).rstrip(b"/")
        if not path.startswith(root + b"/") or b"\n" in path:
            return None
        rel = path[len(root) + 1:]
        if rel.startswith(b"#"):
            rel = b"/" + rel            # not a comment
        if rng is None and _RANGE_LIKE.search(rel):
            # a name ending in " N M" would read as a range: say it is
            # the whole file
            rng = b" 0 %d" % os.stat(path).st_size
        return rel + (rng or b"") + b"\n"

    def _declare(self, order):
        fd = self._open()
        if fd is None:
            return
        lines = []
        size = n = left = 0
        for i in _flat(order):
            line = self._line(i)
            if line is None:
                left += 1
                continue
            if n == MAX_ENTRIES or size + len(line) > MAX_TEXT:
                break
            lines.append(line)
            size += len(line)
            n += 1
        if left:
            self._warn("left", "prefetchfs: %d samples are not under "
                       "%s (or their paths hold a newline): left out of "
                       "the plan" % (left, self.mountpoint))
        text = b"".join(lines)
        self.declared, self.left_out = n, left
        if not text:
            text = b"\n"                # still replaces the last plan
        off = 0
        while off < len(text):          # offset 0 starts the new plan
            w = os.pwrite(fd, text[off:off + CHUNK], off)
            if w <= 0:
                raise OSError(errno.EIO, "short write to the plan")
            off += w
