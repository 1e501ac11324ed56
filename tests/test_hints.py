"""The prefetchfs package's HintedSampler (python/prefetchfs/hints.py), through
its old name examples/prefetchfs_hints.py, without a mount: the "mountpoint" is a temp
directory whose .prefetchfs/plan is a regular file, so what HintedSampler
writes can be read back.  Checks: the indices are those of the wrapped
sampler (RandomSampler, DistributedSampler after set_epoch, a BatchSampler,
a plain list), the plan is their paths in that order (whole files and
records), a new epoch writes a new plan at offset 0 on the same handle,
odd names, samples outside the mount, a mount without the control file
(one warning, indices unchanged), a DataLoader with num_workers=2 reading
the very bytes.

    /usr/bin/python3 -m unittest tests/test_hints.py     (from the top)
"""
import os
import shutil
import sys
import tempfile
import unittest
import warnings

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "examples"))

import prefetchfs_hints  # noqa: E402
from prefetchfs_hints import HintedSampler, find_root, mount_root  # noqa: E402

import torch  # noqa: E402
from torch.utils.data import (BatchSampler, DataLoader, Dataset,  # noqa: E402
                              DistributedSampler, RandomSampler,
                              SequentialSampler)

N = 40


class Files(Dataset):
    """Sample i is the bytes of MNT/d/f<i>.bin (i + 1 bytes of i % 251)."""

    def __init__(self, mnt):
        self.mnt = mnt
        self.samples = [(os.path.join(mnt, "d", "f%d.bin" % i), i % 3)
                        for i in range(N)]

    def __len__(self):
        return N

    def __getitem__(self, i):
        with open(self.samples[i][0], "rb") as f:
            b = f.read()
        return torch.tensor([b[0], len(b)]), i


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pftest.hints.")
        self.mnt = os.path.join(self.dir, "mnt")
        os.makedirs(os.path.join(self.mnt, ".prefetchfs"))
        os.makedirs(os.path.join(self.mnt, "d"))
        self.plan = os.path.join(self.mnt, ".prefetchfs", "plan")
        open(self.plan, "wb").close()
        for i in range(N):
            with open(os.path.join(self.mnt, "d", "f%d.bin" % i), "wb") as f:
                f.write(bytes([i % 251]) * (i + 1))
        self.ds = Files(self.mnt)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def locate(self, i):
        return self.ds.samples[i][0]

    def written(self, n):
        """The first n bytes of the plan file."""
        with open(self.plan, "rb") as f:
            return f.read(n)

    def expect(self, order):
        text = "".join("d/f%d.bin\n" % i for i in order).encode()
        self.assertEqual(self.written(len(text)), text)
        return text


class TestHints(Base):
    def test_list(self):
        hs = HintedSampler([3, 1, 2], self.locate, self.mnt)
        self.assertEqual(len(hs), 3)
        self.assertEqual(list(hs), [3, 1, 2])
        self.expect([3, 1, 2])
        self.assertEqual(hs.declared, 3)
        hs.close()

    def test_random_sampler(self):
        g1 = torch.Generator().manual_seed(7)
        g2 = torch.Generator().manual_seed(7)
        ref = RandomSampler(self.ds, generator=g1)
        hs = HintedSampler(RandomSampler(self.ds, generator=g2), self.locate,
                           self.mnt)
        for epoch in range(3):
            want = list(ref)
            it = iter(hs)
            # the plan is written before the first index is yielded
            self.expect(want)
            self.assertEqual(list(it), want)
        self.assertEqual(len(hs), N)

    def test_new_epoch_same_handle(self):
        order = [5, 4, 3, 2, 1, 0, 6, 7, 8, 9]
        hs = HintedSampler(order, self.locate, self.mnt)
        list(hs)
        fd = hs._fd
        first = self.expect(order)
        order.reverse()
        list(hs)
        self.assertEqual(hs._fd, fd)
        self.expect(order)      # written from offset 0 again
        self.assertEqual(os.path.getsize(self.plan), len(first))
        hs.close()
        self.assertIsNone(hs._fd)

    def test_distributed(self):
        for rank in range(2):
            ref = DistributedSampler(self.ds, num_replicas=2, rank=rank,
                                     shuffle=True, seed=3)
            hs = HintedSampler(DistributedSampler(self.ds, num_replicas=2,
                                                  rank=rank, shuffle=True,
                                                  seed=3),
                               self.locate, self.mnt)
            for epoch in (0, 5):
                ref.set_epoch(epoch)
                hs.set_epoch(epoch)
                want = list(ref)
                self.assertEqual(len(want), N // 2)
                self.assertEqual(list(hs), want)
                self.expect(want)
            self.assertEqual(len(hs), N // 2)
            hs.close()

    def test_batch_sampler(self):
        bs = BatchSampler(SequentialSampler(range(10)), batch_size=4,
                          drop_last=False)
        hs = HintedSampler(bs, self.locate, self.mnt)
        self.assertEqual(list(hs), [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]])
        self.assertEqual(len(hs), 3)
        self.expect(range(10))

    def test_records(self):
        big = os.path.join(self.mnt, "big.bin")
        hs = HintedSampler([2, 0], lambda i: (big, i * 4096, 4096), self.mnt)
        self.assertEqual(list(hs), [2, 0])
        self.assertEqual(self.written(33), b"big.bin 8192 4096\nbig.bin 0 4096\n")
        with self.assertRaises(ValueError):
            list(HintedSampler([0], lambda i: (big, 0, 0), self.mnt))

    def test_relative_paths(self):
        cwd = os.getcwd()
        os.chdir(self.mnt)
        try:
            hs = HintedSampler([1], lambda i: "d/f%d.bin" % i, self.mnt)
            list(hs)
            self.expect([1])
        finally:
            os.chdir(cwd)

    def test_odd_names(self):
        names = ["a b 1 2", "#c", "e f", "x\ny"]
        for n in names[:3]:
            with open(os.path.join(self.mnt, n), "wb") as f:
                f.write(b"12345")
        paths = [os.path.join(self.mnt, n) for n in names] + ["/elsewhere/x"]
        hs = HintedSampler(range(5), lambda i: paths[i], self.mnt)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(list(hs), [0, 1, 2, 3, 4])
            list(hs)
        self.assertEqual(len(w), 1)
        self.assertIn("2 samples are not under", str(w[0].message))
        self.assertEqual(hs.left_out, 2)
        self.assertEqual(self.written(100), b"a b 1 2 0 5\n/#c\ne f\n")

    def test_no_control_file(self):
        os.unlink(self.plan)
        hs = HintedSampler(RandomSampler(self.ds), self.locate, self.mnt)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = list(hs)
            b = list(hs)
        self.assertEqual(len(w), 1)
        self.assertIn("not a prefetchfs mount with hints", str(w[0].message))
        self.assertEqual(sorted(a), list(range(N)))
        self.assertEqual(sorted(b), list(range(N)))
        self.assertFalse(os.path.exists(self.plan))

    def test_refused_plan(self):
        # a mount refusing the plan (ENOSPC, as for one past the limits):
        # /dev/full refuses every write the same way
        os.unlink(self.plan)
        os.symlink("/dev/full", self.plan)
        hs = HintedSampler([1, 2], self.locate, self.mnt)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(list(hs), [1, 2])
            self.assertEqual(list(hs), [1, 2])
        self.assertEqual(len(w), 1)
        self.assertIn("the plan was not declared", str(w[0].message))
        hs.close()

    def test_limits_match_the_daemon(self):
        with open(os.path.join(TOP, "include", "pf_hint.h")) as f:
            h = f.read()
        self.assertIn("#define PF_HINT_MAX_ENTRIES\t(4u << 20)", h)
        self.assertIn("#define PF_HINT_MAX_TEXT\t(256ull << 20)", h)
        self.assertEqual(prefetchfs_hints.MAX_ENTRIES, 4 << 20)
        self.assertEqual(prefetchfs_hints.MAX_TEXT, 256 << 20)

    def test_subdirectory(self):
        # the mount's root is found from a directory under it, or from a
        # file, and the plan's paths are relative to the root
        for given in (os.path.join(self.mnt, "d"),
                      os.path.join(self.mnt, "d", "f3.bin"),
                      os.path.join(self.mnt, "d", "not-yet")):
            hs = HintedSampler([3, 1], self.locate, given)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                self.assertEqual(list(hs), [3, 1])
            self.assertEqual(hs.mountpoint, self.mnt)
            self.expect([3, 1])
            hs.close()
        self.assertEqual(find_root(os.path.join(self.mnt, "d")), self.mnt)

    def test_not_a_mount_names_the_path(self):
        os.unlink(self.plan)
        given = os.path.join(self.mnt, "d")
        hs = HintedSampler([1], self.locate, given)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(list(hs), [1])
        self.assertEqual(len(w), 1)
        msg = str(w[0].message)
        self.assertIn(given + ": not a prefetchfs mount with hints", msg)
        self.assertIn("up to the mount point", msg)
        # the mount comes later: the next epoch declares
        open(self.plan, "wb").close()
        self.assertEqual(list(hs), [1])
        self.expect([1])
        hs.close()

    def test_mount_root(self):
        self.assertTrue(os.path.ismount(mount_root(self.mnt)))
        self.assertTrue(self.mnt.startswith(mount_root(self.mnt)))
        self.assertEqual(mount_root("/"), "/")

    def test_dataloader_workers(self):
        g1 = torch.Generator().manual_seed(11)
        g2 = torch.Generator().manual_seed(11)
        want = list(RandomSampler(self.ds, generator=g1))
        hs = HintedSampler(RandomSampler(self.ds, generator=g2), self.locate,
                           self.mnt)
        loader = DataLoader(self.ds, batch_size=4, sampler=hs, num_workers=2)
        got = []
        for x, idx in loader:
            for row, i in zip(x.tolist(), idx.tolist()):
                self.assertEqual(row, [i % 251, i + 1])
                got.append(i)
        self.assertEqual(got, want)
        self.expect(want)


if __name__ == "__main__":
    unittest.main()
