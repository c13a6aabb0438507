"""Math as MathML, rendered at build time (``latex2mathml``): browsers display it
natively, with no MathJax, no CDN and no JavaScript (``html_math_renderer = "mathml"``).
The TeX source stays in the page as an annotation, for assistive technology, copying
and text search."""

from __future__ import annotations

from docutils import nodes
from sphinx.util import logging
from sphinx.writers.html5 import HTML5Translator

logger = logging.getLogger(__name__)


def _mathml(self: HTML5Translator, node: nodes.Element, display: str) -> str:
    from latex2mathml.converter import convert

    latex = node.astext().strip()
    try:
        mathml = convert(latex, display=display)
    except Exception as err:  # latex2mathml raises many types for unsupported input
        logger.warning(
            f"jaxguide_build.site: cannot render math {latex!r} as MathML: {err}", location=node
        )
        return f"<code>{self.encode(latex)}</code>"
    # Keep the TeX source as an annotation: not drawn, but there for assistive
    # technology, copying and text search (MathML's <semantics>).
    head, _, rest = mathml.partition(">")
    body = rest.rsplit("</math>", 1)[0]
    return (
        f'{head}><semantics><mrow>{body}</mrow><annotation encoding="application/x-tex">'
        f"{self.encode(latex)}</annotation></semantics></math>"
    )


def visit_math(self: HTML5Translator, node: nodes.math) -> None:
    """Inline math, as MathML in a ``<span>``."""
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(_mathml(self, node, "inline") + "</span>")
    raise nodes.SkipNode


def visit_math_block(self: HTML5Translator, node: nodes.math_block) -> None:
    """Display math, as MathML in a ``<div>``, with its equation number."""
    from sphinx.util.math import get_node_equation_number

    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node.get("number"):
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, "Link to this equation")
        self.body.append("</span>")
    self.body.append(_mathml(self, node, "block") + "</div>\n")
    raise nodes.SkipNode
