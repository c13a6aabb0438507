"""Figures: each PNG output stored as a 256-colour palette image when that looks the
same (mean error under one grey level), and each ``<img>`` with ``width``/``height``
attributes (its CSS size: chapters draw at 2x, so half its pixels), loaded lazily, so
nothing moves while it loads. Sphinx's copies of figures that were shrunk are cleared
before it copies them again (:func:`clear_replaced_images`)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from sphinx.application import Sphinx

from ..cache import ContentCache, write_atomic


def _smaller_png(data: bytes) -> bytes:
    """``data`` as a 256-colour palette PNG when that is smaller and looks the same
    (mean error under one grey level); otherwise ``data`` unchanged. Matplotlib's
    figures are flat colours plus anti-aliased edges, so this is usually 3-4x smaller."""
    import io

    import numpy as np
    from PIL import Image

    image = Image.open(io.BytesIO(data)).convert("RGBA")
    alpha = image.getchannel("A").getextrema()
    opaque = alpha[0] == 255
    if opaque:  # as matplotlib's figures are: median cut is closest
        palette = image.convert("RGB").quantize(
            colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
    else:
        palette = image.quantize(
            colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
        )
    error = np.abs(
        np.asarray(palette.convert("RGBA"), dtype=np.int16) - np.asarray(image, dtype=np.int16)
    ).mean()
    out = io.BytesIO()
    palette.save(out, "PNG", optimize=True)
    return out.getvalue() if error < 1.0 and out.tell() < len(data) else data


def shrink_images(outdir: Path) -> None:
    """Each figure in ``_images`` as :func:`_smaller_png` makes it, reusing earlier
    builds' results (``.jaxguide-images`` beside the output)."""
    cache = ContentCache(outdir.parent / ".jaxguide-images", ".png")
    for png in (outdir / "_images").glob("*.png"):
        data = png.read_bytes()
        key = hashlib.sha256(data).hexdigest()
        small = cache.get(key)
        if small is None:
            small = _smaller_png(data)
            cache.put(key, small)
            # The output of a shrunk image maps to itself, so a rebuild that keeps it skips it.
            cache.put(hashlib.sha256(small).hexdigest(), small)
        if small != data:
            write_atomic(png, small)


IMG = re.compile(r"<img\b[^>]*>")
_SIZE_STYLE = re.compile(r'\s*style="width: (\d+(?:\.\d+)?)px; height: (\d+(?:\.\d+)?)px;"')


def sized_img(tag: str, outdir: Path, page: Path) -> str:
    """An output figure's <img> with ``width`` and ``height`` attributes (its CSS size:
    a 2x figure's half size), so the page keeps its layout while images load, and
    loaded lazily. Sphinx writes the size as an inline style, which also fixes the
    height on a narrow screen."""
    if " width=" in tag or "_images/" not in tag:
        return tag
    size = _SIZE_STYLE.search(tag)
    if size:
        width, height = (round(float(v)) for v in size.groups())
        tag = _SIZE_STYLE.sub("", tag, count=1)
    else:
        from PIL import Image

        src = re.search(r'src="([^"]+)"', tag)
        path = (page.parent / src.group(1)) if src else None
        if path is None or not path.is_file():
            return tag
        with Image.open(path) as image:
            width, height = image.size
    # Loaded when near the screen: figures are below the first screenful, and their
    # bytes would otherwise compete with the text for the first paint.
    return tag.replace(
        "<img ", f'<img width="{width}" height="{height}" loading="lazy" decoding="async" ', 1
    )


def clear_replaced_images(app: Sphinx) -> list[tuple[str, dict[str, object], str]]:
    """``html-collect-pages`` (just before Sphinx copies the pages' images): delete the
    copies in ``_build/html/_images`` that differ from their source. :func:`shrink_images`
    shrinks those copies after each build; copying a figure of a re-written page over
    its shrunk copy made Sphinx log "will overwrite data" for every figure. The shrunk
    version comes back from the images' cache."""
    folder = Path(app.outdir) / getattr(app.builder, "imagedir", "_images")
    for src, dest in getattr(app.builder, "images", {}).items():
        target = folder / dest
        try:
            if target.read_bytes() != (Path(app.srcdir) / src).read_bytes():
                target.unlink()
        except OSError:
            continue  # no copy yet, or no source: Sphinx reports a missing one itself
    return []
