"""Font Awesome icons without Font Awesome's JavaScript: the theme's ``fontawesome.js``
(which swaps icon elements for inline SVGs) is removed from every page, and the theme's
stylesheet draws the icons from its webfonts instead. The stylesheet keeps only the
rules of the icons the pages use, the webfonts are subset to the glyphs the stylesheets
refer to (``fontTools``), and a page preloads the (small) fonts its icons use."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from sphinx.errors import ExtensionError

from ..cache import ContentCache, write_atomic
from .memo import PageMemo
from .reading import CLASS_ATTR
from .theme import theme_static

FA_SCRIPT = re.compile(
    r'[ \t]*<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\n?'
)


# A whole icon rule, e.g. }.fa-magnifying-glass:before,.fa-search:before{content:"\f002"}
_FA_CONTENT_RULE = re.compile(
    r'(?<=\})((?:\.fa-[a-z0-9-]+:{1,2}before,)*\.fa-[a-z0-9-]+:{1,2}before)\{content:"[^"]*"\}'
)


_FA_SELECTOR = re.compile(r"\.(fa-[a-z0-9-]+):")


_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{4,6})")


def _keep_used_rules(css: str, used: set[str]) -> str:
    """Drop the ``.fa-<name>:before{content:...}`` rules of icons no page uses."""

    def keep(match: re.Match[str]) -> str:
        return match.group(0) if used.intersection(_FA_SELECTOR.findall(match.group(1))) else ""

    return _FA_CONTENT_RULE.sub(keep, css)


def _codepoints(css: str) -> set[int]:
    """Private-use code points (icon glyphs) a stylesheet refers to, written or escaped."""
    points = {ord(c) for c in css if 0xE000 <= ord(c) <= 0xF8FF}
    points |= {int(h, 16) for h in _CSS_ESCAPE.findall(css) if 0xE000 <= int(h, 16) <= 0xF8FF}
    return points


def _subset_font(source: Path, target: Path, codepoints: set[int], cache: Path) -> None:
    """Write ``source`` to ``target`` with only the glyphs of ``codepoints``; reuse the
    result of an earlier build from ``cache`` when the font and code points are the same."""
    key = hashlib.sha256(source.read_bytes() + repr(sorted(codepoints)).encode()).hexdigest()
    fonts = ContentCache(cache, source.suffix)
    cached = fonts.get(key)
    if cached is not None:
        write_atomic(target, cached)
        return
    from fontTools import subset  # imported only when there is work: it takes a second
    from fontTools.ttLib import TTFont

    font = TTFont(source)
    options = subset.Options()
    options.flavor = "woff2" if source.suffix == ".woff2" else None
    options.layout_features = []
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codepoints))
    subsetter.subset(font)
    font.flavor = options.flavor
    font.save(target)
    fonts.put(key, target.read_bytes())


_ICON_FONTS = {
    "fa-solid-900": ("fa-solid", "fas"),
    "fa-brands-400": ("fa-brands", "fab"),
    "fa-regular-400": ("fa-regular", "far"),
}


def preload_icon_fonts(text: str, page: Path, outdir: Path) -> str:
    """Preload the (subset, few-kB) icon webfonts a page's icons use: fetched with the
    stylesheets, they are there for the first paint, instead of arriving after it and
    widening the header's buttons (a layout shift)."""
    if "</head>" not in text or 'rel="preload" as="font"' in text:
        return text
    classes = set(" ".join(CLASS_ATTR.findall(text)).split())
    prefix = "../" * (len(page.relative_to(outdir).parts) - 1)
    links = "".join(
        f'<link rel="preload" as="font" type="font/woff2" crossorigin '
        f'href="{prefix}_static/vendor/fontawesome/webfonts/{font}.woff2">\n'
        for font, styles in _ICON_FONTS.items()
        if classes & set(styles)
    )
    return text.replace("</head>", links + "</head>", 1)


def keep_used_icons(outdir: Path, memo: PageMemo) -> set[int]:
    """Write the theme's stylesheet with the rules of the icons the pages use only (from
    the theme's own file: an incremental build may keep the output's); return the icon
    code points the site's stylesheets then refer to (:func:`subset_fonts`)."""
    static = outdir / "_static"
    used = memo.icons()
    css = (theme_static() / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    (static / "styles" / "pydata-sphinx-theme.css").write_text(
        _keep_used_rules(css, used), encoding="utf-8"
    )
    stylesheets = "".join(p.read_text(encoding="utf-8") for p in static.rglob("*.css"))
    missing = sorted(n for n in used if not re.search(rf"\.{n}::?before[,{{]", stylesheets))
    if missing:
        raise ExtensionError(
            f"jaxguide_build.site: no CSS rule for Font Awesome icon(s) {missing}; "
            "did the theme change? (a content check: tools/jaxguide_build/patches.py)"
        )
    return _codepoints(stylesheets)


def subset_fonts(outdir: Path, codepoints: set[int]) -> None:
    """Write the theme's icon webfonts into the output with the glyphs of ``codepoints``
    only, reusing earlier builds' results (``.jaxguide-fonts`` beside the output)."""
    fonts = theme_static() / "vendor" / "fontawesome"
    for font in list(fonts.rglob("*.woff2")) + list(fonts.rglob("*.ttf")):
        target = outdir / "_static" / "vendor" / "fontawesome" / font.relative_to(fonts)
        _subset_font(font, target, codepoints, outdir.parent / ".jaxguide-fonts")
