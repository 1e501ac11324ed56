#!/usr/bin/python3
"""Data wait of each job of a fio run, from fio's JSON output.

    fio --readonly --output-format=json --filename=/mnt/x/train-000.bin \\
        examples/fio/seq-batches.fio | /usr/bin/python3 examples/fio/datawait.py

Reads fio's --output-format=json from a file or standard input and prints
one line of key=value pairs per job (as examples/simple_trainer.py does):
io_s is the time the job spent in its reads (mean latency x reads), the
rest of its run time is think time ("compute"), and
data_wait_pct = io_s / wall_s.  Exits 1 if a job reported an error or
read nothing.  Standard library only.
"""
import json
import sys


def main():
    if len(sys.argv) > 2 or sys.argv[1:2] in (["-h"], ["--help"]):
        sys.exit("usage: datawait.py [FIO_JSON_FILE]  (default: standard input)")
    text = open(sys.argv[1]).read() if len(sys.argv) == 2 else sys.stdin.read()
    # fio may print warnings before the JSON object
    start = text.find("{")
    if start < 0:
        sys.exit("datawait.py: not fio JSON output (no JSON object)")
    try:
        run = json.loads(text[start:])
    except ValueError as e:
        sys.exit("datawait.py: not fio JSON output (%s)" % e)
    if not isinstance(run, dict) or not run.get("jobs"):
        sys.exit("datawait.py: no jobs in the fio JSON output")
    bad = 0
    seen = {}
    for job in run["jobs"]:
        name = job["jobname"]
        n = seen.get(name, 0)
        seen[name] = n + 1
        rd = job["read"]
        wall = job["job_runtime"] / 1e3
        io = rd["lat_ns"]["mean"] * rd["total_ios"] / 1e9
        io = min(io, wall)
        nbytes = rd["io_bytes"]
        print("job=%s.%d ios=%d bytes=%d wall_s=%.3f compute_s=%.3f io_s=%.3f "
              "data_wait_pct=%.1f mb_s=%.1f error=%d" % (
                  name, n, rd["total_ios"], nbytes, wall, wall - io, io,
                  100.0 * io / wall if wall else 0,
                  nbytes / wall / 1e6 if wall else 0, job["error"]))
        if job["error"] or nbytes == 0:
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
