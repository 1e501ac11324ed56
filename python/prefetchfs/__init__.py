"""prefetchfs from Python: declare a training epoch's read order, read a
mount's counters, warm its cache tiers.

    from prefetchfs import HintedSampler    # prefetchfs.hints
    prefetchfs.stats("/mnt/data/train")     # prefetchfs.stats
    prefetchfs.warm("/mnt/data", ["train"]) # prefetchfs.warm

Every function takes the mount point or any path under it.  Standard
library only; torch is needed only to run a DataLoader around
HintedSampler.  The daemon and its programs come with the prefetchfs
package (.deb) or `make install`; see docs/packaging.md.
"""
from .hints import CONTROL, MAX_ENTRIES, MAX_TEXT, HintedSampler
from .mount import NotAMountError, find_root, mount_root
from .stats import Stats, stats
from .warm import WarmError, print_progress, warm

__version__ = "0.1.0"

__all__ = ["HintedSampler", "CONTROL", "MAX_ENTRIES", "MAX_TEXT",
           "find_root", "mount_root", "NotAMountError", "stats", "Stats",
           "warm", "print_progress", "WarmError", "__version__"]
