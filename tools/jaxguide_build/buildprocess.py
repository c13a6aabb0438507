"""The build process itself, apart from what it builds: one build of an output folder
at a time (:func:`lock_build`, at ``config-inited``) and the garbage collection of a
process that holds a whole book (:func:`tune_garbage_collector`, at setup). The
execution extension (:mod:`jaxguide_build.execution`) installs both."""

from __future__ import annotations

import atexit
import gc
from pathlib import Path
from typing import IO

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

_AT_EXIT: set[object] = set()  # what tune_garbage_collector registered with atexit
_LOCK: IO[str] | None = None


def lock_build(app: Sphinx, config: Config | None) -> None:
    """``config-inited``: one build of an output folder at a time. A second build of the
    same checkout waits for the first (its cache, store and pages would be written by
    both at once); builds into different output folders do not wait for each other."""
    global _LOCK
    import fcntl

    folder = Path(app.outdir).parent
    folder.mkdir(parents=True, exist_ok=True)
    _LOCK = open(folder / ".jaxguide-build.lock", "w")
    try:
        fcntl.flock(_LOCK, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        logger.info(
            f"[jaxguide-build] another build of {folder} is running; waiting for it to finish"
        )
        fcntl.flock(_LOCK, fcntl.LOCK_EX)


def tune_garbage_collector(app: Sphinx) -> None:
    """The build process's garbage collection, set for a build's large, long-lived graph
    of objects (the environment, the doctrees); the chapters' kernels keep Python's
    defaults.

    * Full collections (one after every 10 of the middle generation, by default) walked
      the whole environment of the book again and again; one after every 100 took a
      tenth less CPU to read and write every page, for 50 MB more at its peak, while
      in the chapters' kernels the same setting cost CPU (measured:
      bench/reports/make-test-2026-11.md). The setting is the build's: restored when it ends, so that a program
      that runs a build keeps its own.
    * The collector walks that graph again while the process exits, a large part of a
      no-change rebuild. Freezing it at exit skips that walk; memory goes back to the OS
      with the process either way. (atexit: a build run inside another program, such as
      a test, keeps its normal collection until that program exits.)
    """
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], 100)
    app.connect("build-finished", lambda app, exc: gc.set_threshold(*before), priority=900)
    if gc.freeze not in _AT_EXIT:
        atexit.register(gc.freeze)
        _AT_EXIT.add(gc.freeze)
