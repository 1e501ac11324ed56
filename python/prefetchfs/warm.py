"""Warm a prefetchfs mount's cache tiers before a job, from Python.

warm() runs the prefetchfs-warm program (installed beside the daemon):

    prefetchfs-warm --json MOUNTPOINT [PATH|@LISTFILE]...

which fetches the paths (files, or trees) into the mount's cache tiers
and prints its progress as one JSON object a line:

    {"files": N, "files_total": N, "bytes": N, "bytes_total": N,
     "rate": BYTES_PER_S, "eta_s": S, "done": false|true}

and exits 0 once done, 1 with a message when it cannot (the tiers cannot
hold the data, the mount went away...).  A warm that is interrupted
resumes where it stopped when run again; a second warm of the same tree
fetches nothing.

    import prefetchfs
    prefetchfs.warm("/mnt/imagenet", ["train"],
                    progress=prefetchfs.print_progress)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

__all__ = ["warm", "print_progress", "WarmError", "PROGRAM"]

PROGRAM = "prefetchfs-warm"
# more paths than this go to the program in a list file (@LISTFILE),
# far below any system's limit on a command line
_MAX_ARGS = 1000
_MAX_ARG_BYTES = 64 << 10


class WarmError(RuntimeError):
    """prefetchfs-warm is missing, or failed: the message says which."""


def _program(program):
    if program is not None:
        return os.fspath(program)
    env = os.environ.get("PREFETCHFS_WARM")
    if env:
        return env
    found = shutil.which(PROGRAM)
    if found:
        return found
    # a script run with a bare PATH (cron, systemd) still finds the
    # installed program
    for d in ("/usr/local/bin", "/usr/bin"):
        p = os.path.join(d, PROGRAM)
        if os.access(p, os.X_OK):
            return p
    raise WarmError(
        "%s not found (not in PATH=%s, /usr/local/bin or /usr/bin): install "
        "prefetchfs (apt install ./prefetchfs_*.deb, or make install), or "
        "give its path as warm(..., program=PATH) or in PREFETCHFS_WARM"
        % (PROGRAM, os.environ.get("PATH", "")))


def _line(p):
    p = os.fsencode(os.fspath(p))
    if b"\n" in p:
        raise ValueError("a path holds a newline: %r" % p)
    return p


def print_progress(p, file=None):
    """A progress callback for warm(): one line, rewritten in place on a
    terminal, a line per report otherwise."""
    out = file if file is not None else sys.stderr
    mb = 1 << 20
    eta = p.get("eta_s")
    line = ("warm: %d/%d files, %.1f/%.1f MiB, %.1f MiB/s%s"
            % (p.get("files", 0), p.get("files_total", 0),
               p.get("bytes", 0) / mb, p.get("bytes_total", 0) / mb,
               p.get("rate", 0) / mb,
               ", ETA %.0f s" % eta if eta is not None and
               not p.get("done") else ""))
    if p.get("done"):
        line += ", done"
    if out.isatty():
        out.write("\r\033[K" + line + ("\n" if p.get("done") else ""))
    else:
        out.write(line + "\n")
    out.flush()


def warm(mountpoint, paths=(), progress=None, program=None):
    """Fetch paths into the cache tiers of the prefetchfs mount at
    mountpoint; returns the last progress report (a dict, "done" true).

    mountpoint: the mount point (as prefetchfs-warm takes it).
    paths: files or directories under it (absolute, or as
        prefetchfs-warm takes them: relative to the mount point), or
        "@LISTFILE" strings naming files that list paths one a line;
        none warms the whole mount.  Many paths go to the program in a
        list file of its own.
    progress: called with each report, a dict (see the module's
        doc); print_progress prints them.
    program: the prefetchfs-warm to run (default: $PREFETCHFS_WARM,
        else PATH, /usr/local/bin, /usr/bin).

    Raises WarmError if the program is missing or fails (its message,
    e.g. that the tiers cannot hold the data); a KeyboardInterrupt stops
    the program (SIGTERM: a later warm resumes) and is raised again.
    """
    prog = _program(program)
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    args = [_line(p) for p in paths]
    listfile = None
    try:
        if (len(args) > _MAX_ARGS or
                sum(len(a) + 1 for a in args) > _MAX_ARG_BYTES):
            with tempfile.NamedTemporaryFile(
                    "wb", prefix="prefetchfs-warm.", suffix=".list",
                    delete=False) as f:
                listfile = f.name
                for a in args:
                    if a.startswith(b"@"):      # a list file of the caller
                        a = a[1:]
                        with open(a, "rb") as lf:
                            shutil.copyfileobj(lf, f)
                        continue
                    f.write(a + b"\n")
            args = [b"@" + os.fsencode(listfile)]
        return _run([os.fsencode(prog), b"--json",
                     os.fsencode(os.fspath(mountpoint))] + args, progress)
    finally:
        if listfile is not None:
            os.unlink(listfile)


def _run(argv, progress):
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as e:
        raise WarmError("%s: %s" % (os.fsdecode(argv[0]),
                                    e.strerror or e)) from e
    err = []
    # stderr drained beside stdout, so that neither pipe fills
    t = threading.Thread(target=lambda: err.append(proc.stderr.read()),
                         daemon=True)
    t.start()
    last = None
    other = []
    try:
        for raw in proc.stdout:
            try:
                rep = json.loads(raw)
            except ValueError:
                rep = None
            if not isinstance(rep, dict):
                other.append(raw.decode("utf-8", "replace").rstrip("\n"))
                continue
            last = rep
            if progress is not None:
                progress(rep)
        rc = proc.wait()
    except BaseException:
        # KeyboardInterrupt, or the callback raised: stop the program
        # the way a user's Ctrl-C would (it keeps what it fetched)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise
    finally:
        proc.stdout.close()
        t.join()
        proc.stderr.close()
    msg = b"".join(err).decode("utf-8", "replace").strip()
    msg = "; ".join([m for m in [msg] + other if m])
    if rc != 0:
        raise WarmError(msg or "%s exited with status %d"
                        % (os.fsdecode(argv[0]), rc))
    if last is None:
        raise WarmError("%s printed no progress%s"
                        % (os.fsdecode(argv[0]), ": " + msg if msg else ""))
    return last
