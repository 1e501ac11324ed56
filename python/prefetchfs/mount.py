"""Finding the prefetchfs mount that serves a path.

Every prefetchfs mount has a virtual directory .prefetchfs at its root
(found by lookup, not listed) holding the stats file and the plan file.
A path anywhere under the mount, a subdirectory of it or one of its
files, leads to that root: find_root() walks up from the path to the
first directory whose .prefetchfs/plan exists, never past the mount
point holding the path.
"""
import os

__all__ = ["find_root", "mount_root", "NotAMountError", "CONTROL_DIR"]

CONTROL_DIR = ".prefetchfs"


class NotAMountError(OSError):
    """No prefetchfs mount serves the path (see find_root())."""


def mount_root(path):
    """The mount point of the filesystem holding path (walks up to it)."""
    p = os.path.abspath(os.fspath(path))
    while not os.path.ismount(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return p


def find_root(path, what="plan"):
    """The root of the prefetchfs mount that serves path.

    path: the mount point, or any file or directory under it (it need
        not exist: a sample's path is enough).
    what: the control file that must be there, "plan" or "stats".

    Returns the directory holding .prefetchfs/WHAT, the nearest of path
    and its parents up to the mount point holding path.  Raises
    NotAMountError, naming path and that mount point, if there is none
    (an older prefetchfs has no plan file; a plain directory has
    neither).  Paths are taken as given (os.path.abspath, symbolic
    links not resolved), so that samples named from the same path stay
    under the root found.
    """
    start = os.path.abspath(os.fspath(path))
    p = start
    while True:
        if os.path.exists(os.path.join(p, CONTROL_DIR, what)):
            return p
        parent = os.path.dirname(p)
        if parent == p or (os.path.isdir(p) and os.path.ismount(p)):
            break
        p = parent
    raise NotAMountError(
        "%s: not a prefetchfs mount%s (no %s/%s in it or above it, up to "
        "the mount point %s)" % (start, " with hints" if what == "plan"
                                 else "", CONTROL_DIR, what, p))
