"""Lazy numpy loading with single-threaded BLAS.

graymatter's numeric work is matrix-vector products (cosine search), which are memory-bound: one BLAS
thread is as fast as several, and on a busy machine a multi-threaded OpenBLAS busy-waits (measured here:
30k x 256 float32 ``M @ q`` 6.0 ms with two threads, 1.0 ms with one). Recall already overlaps the vector
search with the keyword search in a worker thread.

When graymatter is the first to import numpy in a process, the BLAS thread count defaults to one; an
explicit ``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS`` set by the user always wins, and a process that
imported numpy earlier keeps its own setting.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def load_numpy() -> ModuleType:
    """Import numpy (once), defaulting BLAS to one thread if numpy was not loaded yet."""
    if "numpy" not in sys.modules:
        for variable in BLAS_THREAD_VARIABLES:
            os.environ.setdefault(variable, "1")
    import numpy

    return numpy
