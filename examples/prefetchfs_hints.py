"""The old name of prefetchfs.HintedSampler, kept for scripts that import it.

HintedSampler now lives in the `prefetchfs` Python package (python/ in the
source tree; installed by `pip install ./python`, by `make install` and by
the .deb), which also reads a mount's counters and warms its cache:

    from prefetchfs import HintedSampler

This file, beside the examples that import it, uses the package of its own
source tree if there is one (python/ next to examples/), else the
installed package.  See help(prefetchfs.hints) for the sampler itself.
"""
import os
import sys

_TREE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "python")
if (os.path.isfile(os.path.join(_TREE, "prefetchfs", "hints.py")) and
        _TREE not in sys.path):
    sys.path.insert(0, _TREE)

from prefetchfs.hints import (CONTROL, MAX_ENTRIES, MAX_TEXT,  # noqa: E402
                              HintedSampler)
from prefetchfs.mount import find_root, mount_root  # noqa: E402

__all__ = ["HintedSampler", "mount_root", "find_root", "CONTROL"]
__all__ += ["MAX_ENTRIES", "MAX_TEXT"]
