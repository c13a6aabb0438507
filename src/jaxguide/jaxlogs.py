"""Read what JAX logs, as text a page can print.

JAX reports compilations (``jax_log_compiles``) and the reasons for cache misses
(``jax_explain_cache_misses``) through Python's :mod:`logging`, at level WARNING,
on loggers under ``"jax"``. With no handler configured those records end up on
stderr, where a notebook shows them as an error-coloured stream.
:func:`capture_jax_logs` collects them instead, for the duration of a ``with``
block, and gives them back as strings with the parts that change from run to run
(object ids, elapsed seconds, the notebook's temporary file names) replaced by
fixed placeholders, so that two runs print the same text.

Example:
    >>> import jax
    >>> import jax.numpy as jnp
    >>> from jaxguide.jaxlogs import capture_jax_logs
    >>> x = jnp.ones(3)
    >>> with jax.log_compiles(True), capture_jax_logs() as logs:
    ...     _ = jax.jit(lambda v: v * 2)(x)
    >>> any(line.startswith("Compiling jit(<lambda>)") for line in logs)
    True
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

from jaxguide import _checks

__all__ = ["capture_jax_logs", "scrub"]

_SUBS = (
    # An object's id differs in every process.
    (re.compile(r" id=\d+"), ""),
    # Elapsed times ("in 0.0123 sec") are measurements, not behaviour.
    (re.compile(r"in \d+(?:\.\d+)?(?:e-?\d+)? sec"), "in <t> sec"),
    # IPython names each cell's code /tmp/ipykernel_<pid>/<hash>.py.
    (re.compile(r"/tmp/ipykernel_\d+/\d+\.py"), "<cell>"),
)


def scrub(message: str) -> str:
    """Replace the run-dependent parts of a JAX log message by placeholders.

    Args:
        message: one log message.

    Returns:
        The message with object ids removed, elapsed seconds shown as
        ``in <t> sec`` and notebook cell file names shown as ``<cell>``.

    Raises:
        TypeError: if ``message`` is not a string.

    Example:
        >>> scrub("Finished tracing f for jit in 0.0012 sec")
        'Finished tracing f for jit in <t> sec'
    """
    _checks.instance("scrub", "message", message, str, what="a str")
    for pattern, replacement in _SUBS:
        message = pattern.sub(replacement, message)
    return message


class _ListHandler(logging.Handler):
    def __init__(self, sink: list[str]):
        super().__init__(level=logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(scrub(record.getMessage()))


@contextmanager
def capture_jax_logs(logger: str = "jax", level: int = logging.WARNING) -> Iterator[list[str]]:
    """Collect the log messages of ``logger`` (and its children) in a list.

    While the block runs, records at ``level`` or above are appended to the
    yielded list (scrubbed with :func:`scrub`) and are not passed on to the
    root logger, so nothing reaches stderr. The logger's level and propagation
    are restored on exit, and so are its own handlers, which are detached
    while the block runs.

    Args:
        logger: name of the logger to capture; ``"jax"`` covers all of JAX.
        level: the lowest level captured, e.g. ``logging.WARNING``.

    Returns:
        A context manager yielding the list of captured messages.

    Raises:
        TypeError: if ``logger`` is not a string or ``level`` not an int.

    Example:
        >>> import logging
        >>> with capture_jax_logs("jax.demo") as logs:
        ...     logging.getLogger("jax.demo.sub").warning("x id=42 in 0.5 sec")
        >>> logs
        ['x in <t> sec']
    """
    logger = _checks.string("capture_jax_logs", "logger", logger, example="'jax'")
    if isinstance(level, bool) or not isinstance(level, int):
        raise _checks.wrong_type(
            "capture_jax_logs", "level", level, "an int logging level", "pass e.g. logging.WARNING"
        )
    messages: list[str] = []
    log = logging.getLogger(logger)
    handler = _ListHandler(messages)
    handler.setLevel(level)
    old_level, old_propagate = log.level, log.propagate
    old_handlers = list(log.handlers)
    for h in old_handlers:  # e.g. a stderr handler set by JAX_LOGGING_LEVEL
        log.removeHandler(h)
    log.addHandler(handler)
    log.propagate = False
    if log.level == logging.NOTSET or log.level > level:
        log.setLevel(level)
    try:
        yield messages
    finally:
        log.removeHandler(handler)
        for h in old_handlers:
            log.addHandler(h)
        log.setLevel(old_level)
        log.propagate = old_propagate
