"""What produced a page: JAX and jaxlib versions, backend, devices, when and how long.

The book's chapters end with a hidden cell that glues :func:`provenance` into a small
box at the top of the page, so every page says what its outputs were computed with.

Example:
    >>> from jaxguide.runinfo import provenance
    >>> p = provenance()
    >>> p.jax_version == __import__("jax").__version__
    True
"""

from __future__ import annotations

import datetime
import html
import time
from dataclasses import dataclass

__all__ = ["Provenance", "provenance"]

# Set when jaxguide is first imported: a chapter's first cell imports it.
_STARTED = time.perf_counter()


@dataclass(frozen=True)
class Provenance:
    jax_version: str
    jaxlib_version: str
    backend: str
    device_count: int
    device_kinds: tuple[str, ...]
    executed_at: str
    seconds: float

    def summary(self) -> str:
        return (
            f"JAX {self.jax_version}, jaxlib {self.jaxlib_version}, "
            f"{self.device_count} {self.backend.upper()} device{'s' if self.device_count != 1 else ''} "
            f"({', '.join(self.device_kinds)}); executed {self.executed_at}, its cells running for "
            f"{self.seconds:.1f} s (from import jaxguide; kernel start-up not included)"
        )

    def __repr__(self) -> str:
        return f"Provenance({self.summary()})"

    def _repr_html_(self) -> str:
        return (
            '<div class="jaxguide-provenance"><strong>How this page was produced:</strong> '
            f"every output below was computed when the page was built, with {html.escape(self.summary())}."
            "</div>"
        )


def provenance() -> Provenance:
    """Describe the running JAX and how long since ``jaxguide`` was imported.

    Starts JAX if it has not started (call it at the end of a chapter).
    """
    import jax
    import jaxlib

    devices = jax.devices()
    return Provenance(
        jax_version=jax.__version__,
        jaxlib_version=jaxlib.__version__,
        backend=jax.default_backend(),
        device_count=len(devices),
        device_kinds=tuple(sorted({d.device_kind for d in devices})),
        executed_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        seconds=time.perf_counter() - _STARTED,
    )
