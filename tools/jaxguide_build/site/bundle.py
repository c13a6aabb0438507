"""One stylesheet per page instead of ten: the local stylesheets a page links
(already purged) are written, in order, into ``_static/jaxguide-bundle-<digest>.css``;
on a phone's connection that is one request before the first paint, not ten."""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from pathlib import Path

from sphinx.errors import ExtensionError

from ..cache import write_atomic
from .memo import PageMemo
from .reading import LINK

_HREF = re.compile(r'\bhref="([^"]+)"')
CSS_URL = re.compile(r"""url\((['"]?)([^'")]+)\1\)""")


def _is_local_stylesheet(link: str) -> bool:
    href = _HREF.search(link)
    return (
        re.search(r'\brel="stylesheet"', link) is not None
        and href is not None
        and "://" not in href.group(1)
        and not href.group(1).startswith("//")
        and re.search(r'\bmedia="(?!all")', link) is None
    )


def stylesheet_hrefs(text: str) -> list[str]:
    """The local stylesheets (for every medium) a page's <head> links, in order."""
    head = text.partition("</head>")[0]
    links = [link for link in LINK.findall(head) if _is_local_stylesheet(link)]
    return [m.group(1) for m in map(_HREF.search, links) if m]


# The theme and its extensions link ten stylesheets. On a phone's connection each is a
# request before the first paint, more than the six a browser opens at once to a host
# over HTTP/1.1: one stylesheet made of them, in the same order, is one request.
_BUNDLE_DIR = "_static"
BUNDLE_NAME = re.compile(r"_static/jaxguide-bundle-[0-9a-f]{12}\.css")
_BUNDLE_HEADER = "/* jaxguide bundle of: "


def bundle_sources(path: Path) -> list[str]:
    """The stylesheets (paths relative to the output folder) a bundle was made of: its
    first line. A page that links a bundle another build wrote needs it."""
    if not path.is_file():
        raise ExtensionError(
            f"jaxguide_build.site: {path.name} is missing (a page links it); build from a clean "
            "output folder (jupyter-book clean book/)"
        )
    first = path.read_text(encoding="utf-8").partition("\n")[0]
    if not first.startswith(_BUNDLE_HEADER):
        raise ExtensionError(f"jaxguide_build.site: {path} is not a stylesheet bundle")
    return first.removeprefix(_BUNDLE_HEADER).removesuffix(" */").split()


def relocated_urls(css: str, source_dir: Path, target_dir: Path) -> str:
    """``css`` written for a file in ``source_dir``, with its relative ``url()``s
    rewritten to resolve from a file in ``target_dir`` (absolute ones, data and
    fragments kept)."""
    up = Path(os.path.relpath(source_dir, target_dir)).as_posix()

    def moved(url: re.Match[str]) -> str:
        quote, ref = url.group(1), url.group(2)
        if up == "." or re.match(r"^(?:[a-z]+:|/|#)", ref):
            return url.group(0)
        return f"url({quote}{posixpath.normpath(f'{up}/{ref}')}{quote})"

    return CSS_URL.sub(moved, css)


def _relocated_css(css: str, source: Path, target_dir: Path) -> str:
    """``css`` from ``source``, with its relative ``url()``s rewritten to resolve from
    ``target_dir`` (:func:`relocated_urls`), and without ``@charset`` (only allowed first
    in a file)."""
    css = re.sub(r'@charset\s+"[^"]*"\s*;', "", css)
    return relocated_urls(css, source.parent, target_dir)


def bundle_stylesheets(outdir: Path, memo: PageMemo) -> None:
    """Link one stylesheet instead of several from every page: the local stylesheets a
    page links (already purged) written into ``_static/jaxguide-bundle-<digest>.css``,
    in order, named by its content; a page that links an older bundle links the new one."""
    outdir = outdir.resolve()
    bundles: dict[tuple[str, ...], str] = {}
    for page in sorted(outdir.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        head, sep, body = text.partition("</head>")
        links = [link for link in LINK.findall(head) if _is_local_stylesheet(link)]
        if not links or not sep:
            continue
        prefix = "../" * (len(page.relative_to(outdir).parts) - 1)
        sources: list[str] = []
        for link in links:
            found = _HREF.search(link)
            href = found.group(1).split("?")[0] if found else ""
            path = (page.parent / href).resolve()
            if BUNDLE_NAME.search(href):
                sources += bundle_sources(path)
            else:
                sources.append(path.relative_to(outdir).as_posix())
        key = tuple(sources)
        if key not in bundles:
            parts = []
            for source in sources:
                path = outdir / source
                css = path.read_text(encoding="utf-8")
                parts.append(_relocated_css(css, path, outdir / _BUNDLE_DIR))
            content = "\n".join(parts)
            digest = hashlib.sha256(content.encode()).hexdigest()[:12]
            name = f"{_BUNDLE_DIR}/jaxguide-bundle-{digest}.css"
            full = f"{_BUNDLE_HEADER}{' '.join(sources)} */\n{content}"
            target = outdir / name
            if not target.is_file() or target.read_text(encoding="utf-8") != full:
                write_atomic(target, full.encode())
            bundles[key] = name
        first = head.index(links[0])
        new_head = head[:first] + f'<link rel="stylesheet" href="{prefix}{bundles[key]}" />'
        rest = head[first + len(links[0]) :]
        for link in links[1:]:
            rest = re.sub(r"[ \t]*" + re.escape(link) + r"\n?", "", rest, count=1)
        new = new_head + rest + sep + body
        if new != text:
            page.write_text(new, encoding="utf-8")
            memo.entry(page)
    # Bundles no page links any more (an earlier build's): removed.
    live = {outdir / name for name in bundles.values()}
    for old in (outdir / _BUNDLE_DIR).glob("jaxguide-bundle-*.css"):
        if old not in live:
            old.unlink()
