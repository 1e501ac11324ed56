"""The prefetchfs Python package's stats() and warm() without a mount.

A temp directory whose .prefetchfs/stats is a regular file stands for the
mount; a small Python program speaking prefetchfs-warm's --json protocol
stands for prefetchfs-warm (the program's own behaviour is tested by its
mount test; here: the arguments it gets, the reports passed on, its
failures raised with its message).  Run with the package to test on
sys.path:

    python3 -m unittest tests/test_prefetchfs.py     (tests/mount_pip.sh)
"""
import json
import os
import shutil
import stat
import sys
import tempfile
import unittest

import prefetchfs

# Speaks prefetchfs-warm's protocol.  Its argv (one JSON list) goes to
# $FAKE_WARM_ARGS, with the contents of any @LISTFILE; FAKE_WARM_MODE:
# ok (3 reports, exit 0), fail (a message on stderr, exit 1), noise
# (a non-JSON line, then ok), slow (reports forever)
FAKE = r'''#!PYTHON
import json, os, sys, time
argv = sys.argv[1:]
lists = {a: open(a[1:], "rb").read().decode() for a in argv
         if a.startswith("@") and os.path.exists(a[1:])}
with open(os.environ["FAKE_WARM_ARGS"], "w") as f:
    json.dump({"argv": argv, "lists": lists}, f)
mode = os.environ.get("FAKE_WARM_MODE", "ok")
if mode == "fail":
    sys.stderr.write("prefetchfs-warm: the tiers cannot hold 9.0G (max_memory=1G, no cache_dir)\n")
    sys.exit(1)
if mode == "noise":
    print("starting", flush=True)
n = 0
while True:
    n += 1
    done = mode != "slow" and n == 3
    print(json.dumps({"files": n, "files_total": 3, "bytes": n << 20,
                      "bytes_total": 3 << 20, "rate": 1 << 20,
                      "eta_s": 3 - n, "done": done}), flush=True)
    if done:
        break
    if mode == "slow":
        time.sleep(0.05)
'''

STATS = {
    "backend": "posix:/src",
    "warnings": ["a warning"],
    "totals": {"reads": 200, "hits": 150, "waits": 50, "wait_ms": 2500.0,
               "bytes_served": 1000, "bytes_fetched": 1200,
               "bytes_prefetched": 900, "memory_used": 65536,
               "memory_max": 1 << 30},
    "transport": {"disk_cache": {"hits": 7, "bytes_hit": 700}},
    "plans": [{"id": 1, "state": "following", "entries": 40}],
    "plans_ended": {"plans": 2},
    "streams": [],
}


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pftest.pkg.")
        self.mnt = os.path.join(self.dir, "mnt")
        os.makedirs(os.path.join(self.mnt, ".prefetchfs"))
        os.makedirs(os.path.join(self.mnt, "train", "a"))
        self.write_stats(STATS)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write_stats(self, s):
        with open(os.path.join(self.mnt, ".prefetchfs", "stats"), "w") as f:
            json.dump(s, f)


class TestStats(Base):
    def test_from_any_path_under_the_mount(self):
        for p in (self.mnt, os.path.join(self.mnt, "train"),
                  os.path.join(self.mnt, "train", "a", "missing.jpg")):
            s = prefetchfs.stats(p)
            self.assertIsInstance(s, dict)
            self.assertEqual(s.root, self.mnt)
            self.assertEqual(s["backend"], "posix:/src")

    def test_accessors(self):
        s = prefetchfs.stats(self.mnt)
        self.assertEqual((s.reads, s.hits, s.waits), (200, 150, 50))
        self.assertAlmostEqual(s.hit_rate, 0.75)
        self.assertAlmostEqual(s.wait_s, 2.5)
        self.assertEqual((s.bytes_served, s.bytes_fetched,
                          s.bytes_prefetched), (1000, 1200, 900))
        self.assertEqual((s.memory_used, s.memory_max), (65536, 1 << 30))
        self.assertEqual(s.disk_cache["hits"], 7)
        self.assertEqual(s.plans[0]["entries"], 40)
        self.assertEqual(s.plans_ended["plans"], 2)
        self.assertEqual(s.warnings, ["a warning"])

    def test_since(self):
        before = prefetchfs.stats(self.mnt)
        later = json.loads(json.dumps(STATS))
        later["totals"]["reads"] = 260
        later["totals"]["wait_ms"] = 3000.0
        self.write_stats(later)
        d = prefetchfs.stats(self.mnt).since(before)
        self.assertEqual(d["reads"], 60)
        self.assertAlmostEqual(d["wait_ms"], 500.0)
        self.assertEqual(d["hits"], 0)

    def test_older_daemon_fields_missing(self):
        self.write_stats({"totals": {}})
        s = prefetchfs.stats(self.mnt)
        self.assertIsNone(s.hit_rate)
        self.assertEqual((s.reads, s.wait_s, s.disk_cache, s.plans,
                          s.warnings), (0, 0.0, {}, [], []))

    def test_not_a_mount(self):
        os.unlink(os.path.join(self.mnt, ".prefetchfs", "stats"))
        with self.assertRaises(prefetchfs.NotAMountError) as cm:
            prefetchfs.stats(os.path.join(self.mnt, "train"))
        msg = str(cm.exception)
        self.assertIn(os.path.join(self.mnt, "train") +
                      ": not a prefetchfs mount (no .prefetchfs/stats", msg)
        self.assertIsInstance(cm.exception, OSError)

    def test_find_root_stops_at_the_mount_point(self):
        # / is a mount point: the walk ends there
        with self.assertRaises(prefetchfs.NotAMountError) as cm:
            prefetchfs.find_root("/proc/self", "stats")
        self.assertIn("up to the mount point /proc", str(cm.exception))


class TestWarm(Base):
    def setUp(self):
        super().setUp()
        self.prog = os.path.join(self.dir, "fake-warm")
        with open(self.prog, "w") as f:
            f.write(FAKE.replace("PYTHON", sys.executable))
        os.chmod(self.prog, stat.S_IRWXU)
        self.args = os.path.join(self.dir, "args.json")
        os.environ["FAKE_WARM_ARGS"] = self.args
        os.environ.pop("FAKE_WARM_MODE", None)

    def tearDown(self):
        os.environ.pop("FAKE_WARM_ARGS", None)
        os.environ.pop("FAKE_WARM_MODE", None)
        super().tearDown()

    def got(self):
        with open(self.args) as f:
            return json.load(f)

    def test_progress_and_result(self):
        seen = []
        last = prefetchfs.warm(self.mnt, ["train", "@list"], seen.append,
                               program=self.prog)
        self.assertEqual(self.got()["argv"],
                         ["--json", self.mnt, "train", "@list"])
        self.assertEqual([r["files"] for r in seen], [1, 2, 3])
        self.assertTrue(last["done"])
        self.assertEqual(last["bytes_total"], 3 << 20)

    def test_one_path_as_a_string(self):
        prefetchfs.warm(self.mnt, "train", program=self.prog)
        self.assertEqual(self.got()["argv"], ["--json", self.mnt, "train"])

    def test_many_paths_go_in_a_list_file(self):
        paths = ["train/a/%05d.jpg" % i for i in range(5000)]
        prefetchfs.warm(self.mnt, paths, program=self.prog)
        g = self.got()
        self.assertEqual(len(g["argv"]), 3)
        self.assertTrue(g["argv"][2].startswith("@"))
        self.assertEqual(g["lists"][g["argv"][2]], "".join(
            p + "\n" for p in paths))
        self.assertFalse(os.path.exists(g["argv"][2][1:]))

    def test_failure_raises_its_message(self):
        os.environ["FAKE_WARM_MODE"] = "fail"
        with self.assertRaises(prefetchfs.WarmError) as cm:
            prefetchfs.warm(self.mnt, ["train"], program=self.prog)
        self.assertIn("the tiers cannot hold 9.0G", str(cm.exception))

    def test_other_lines_are_not_reports(self):
        os.environ["FAKE_WARM_MODE"] = "noise"
        seen = []
        prefetchfs.warm(self.mnt, [], seen.append, program=self.prog)
        self.assertEqual(len(seen), 3)
        self.assertEqual(self.got()["argv"], ["--json", self.mnt])

    def test_callback_raising_stops_the_program(self):
        os.environ["FAKE_WARM_MODE"] = "slow"

        def stop(rep):
            if rep["files"] == 2:
                raise KeyboardInterrupt
        with self.assertRaises(KeyboardInterrupt):
            prefetchfs.warm(self.mnt, ["train"], stop, program=self.prog)

    def test_missing_program(self):
        old = os.environ.get("PATH")
        os.environ["PATH"] = self.dir
        try:
            if (os.path.exists("/usr/local/bin/prefetchfs-warm") or
                    os.path.exists("/usr/bin/prefetchfs-warm")):
                self.skipTest("prefetchfs-warm is installed here")
            with self.assertRaises(prefetchfs.WarmError) as cm:
                prefetchfs.warm(self.mnt, ["train"])
            self.assertIn("prefetchfs-warm not found", str(cm.exception))
            with self.assertRaises(prefetchfs.WarmError) as cm:
                prefetchfs.warm(self.mnt, [], program=self.dir + "/none")
            self.assertIn("No such file", str(cm.exception))
        finally:
            os.environ["PATH"] = old

    def test_print_progress(self):
        class Out(list):
            def write(self, s):
                self.append(s)

            def flush(self):
                pass

            def isatty(self):
                return False
        out = Out()
        prefetchfs.print_progress({"files": 1, "files_total": 3,
                                   "bytes": 1 << 20, "bytes_total": 3 << 20,
                                   "rate": 1 << 20, "eta_s": 2,
                                   "done": False}, out)
        self.assertEqual(out, ["warm: 1/3 files, 1.0/3.0 MiB, 1.0 MiB/s, "
                               "ETA 2 s\n"])


if __name__ == "__main__":
    unittest.main()
