"""WCAG 2 contrast of two colours (private): the sharding pictures pick label colours
with it, and the book's build (tools/jaxguide_build/site/pages.py) fixes output text
that does not reach 4.5:1 on its background.

>>> round(contrast("#000000", "#ffffff"), 1)
21.0
>>> round(contrast((1.0, 1.0, 1.0), "#de9ed6"), 1)
2.1
"""

from __future__ import annotations

from collections.abc import Sequence

Color = str | Sequence[float]  # "#rrggbb", or RGB(A) in 0..1


def _rgb(color: Color) -> tuple[float, float, float]:
    if isinstance(color, str):
        if len(color) != 7 or not color.startswith("#"):
            raise ValueError(f"_wcag: expected a colour as '#rrggbb', got {color!r}")
        r, g, b = (int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))
        return r, g, b
    r, g, b = (float(c) for c in color[:3])
    return r, g, b


def relative_luminance(color: Color) -> float:
    """WCAG 2 relative luminance of a colour, from 0 (black) to 1 (white).

    >>> relative_luminance("#ffffff")
    1.0
    """

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in _rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: Color, b: Color) -> float:
    """WCAG 2 contrast ratio of two colours, from 1 (same) to 21 (black on white).

    >>> contrast("#777777", "#777777")
    1.0
    """
    light, dark = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)
