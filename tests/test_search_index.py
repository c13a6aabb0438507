"""The build pass that writes the site's search index (tools/jaxguide_build/site/search.py):
one record per section of a page, the alias table of the migration appendix, the search
scripts on search.html alone, and a Pagefind index whose records are those sections."""

from __future__ import annotations

import json

import pytest

from jaxguide_build.site import search

PAGE = """<html><body><nav>Chapter list</nav>
<article class="bd-article">
<section id="the-chapter"><span id="chapter"></span>
<h1><span class="section-number">3. </span>The chapter<a class="headerlink" href="#the-chapter">#</a></h1>
<div class="output text_html"><div class="jaxguide-provenance">How this page was produced</div></div>
<p>Intro words about pytrees, and an IndivisibleError.</p>
<section id="first-part"><span id="chapter-first"></span>
<h2><span class="section-number">3.1. </span>First part<a class="headerlink" href="#first-part">#</a></h2>
<p>Uses <code>jax.tree.leaves</code> on a dict.</p>
<div class="cell"><div class="cell_input"><pre>print(jax.tree.leaves(x))</pre></div>
<div class="cell_output"><pre>[1, 2]</pre></div></div>
<section id="deeper"><h3>Deeper<a class="headerlink" href="#deeper">#</a></h3><p>Nested words.</p></section>
</section>
<section id="questions-readers-ask"><h2>Questions readers ask</h2>
<ul><li>Why? Answered in <a class="reference internal" href="#chapter-first">First part</a>,
and <a class="reference internal" href="other.html#elsewhere">elsewhere</a>.</li></ul></section>
<section id="exercise-content"><p>An exercise without a heading of its own.</p></section>
<div class="cell tag_remove-input"><div class="cell_input"><pre>glue("hidden", 1)</pre></div>
<div class="cell_output"><pre>shown output</pre></div></div>
<details><summary class="toggle-details__summary">Show</summary><p>Folded words.</p></details>
<script>var x = 1;</script><button>Copy</button>
</section>
</article></body></html>"""


def test_each_section_is_a_record_with_its_own_content():
    records = search.sections(PAGE, "pytrees")
    assert [r.url for r in records] == [
        "pytrees.html",
        "pytrees.html#first-part",
        "pytrees.html#deeper",
        "pytrees.html#questions-readers-ask",
    ]
    first, part, deeper, questions = records
    assert part.title == "3.1. First part" and part.page == "3. The chapter"
    # Its prose, code and output, not its subsection's, nor permalinks or provenance.
    assert "jax.tree.leaves" in part.html and "[1, 2]" in part.html
    assert "Nested words" not in part.html and "Nested words" in deeper.html
    assert "Intro words" in first.html and "First part" not in first.html
    assert "How this page was produced" not in first.html
    assert "headerlink" not in part.html and "Chapter list" not in first.html
    # A section without a heading stays in its parent's record.
    assert "An exercise" in first.html
    # A hidden input's code is left out, its output kept; so are scripts and buttons.
    assert "shown output" in first.html and "glue(" not in first.html
    assert "Folded words" in first.html and "Show" not in first.html
    assert "var x" not in first.html and "Copy" not in first.html
    # Questions lists weigh less than a section's own words.
    assert 'data-pagefind-weight="0.5"' in questions.html
    assert "data-pagefind-weight" not in part.html
    assert 'data-pagefind-meta="title">3.1. First part</h2>' in part.document()
    # A section knows its labels; a questions list, where its links lead.
    assert {"first-part", "chapter-first"} <= part.ids and "deeper" not in part.ids
    assert questions.links == ("pytrees.html#chapter-first", "other.html#elsewhere")
    assert part.links == ()


# What the index leaves out, as the CSS selector its docstring spells out.
NOT_TEXT = (
    "a.headerlink, script, style, button, summary, .jaxguide-provenance, "
    "div.cell.tag_remove-input .cell_input, div.cell.tag_hide-input .cell_input, "
    "annotation, .toggle-details__summary"
)


def test_elements_left_out_are_those_of_the_css_selector():
    from bs4 import BeautifulSoup

    article = BeautifulSoup(PAGE, "html.parser").article
    assert search._not_text(article) == article.select(NOT_TEXT)
    assert len(search._not_text(article)) >= 8


def test_unchanged_pages_are_read_from_the_memo(tmp_path, monkeypatch):
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "pytrees.html").write_text(PAGE)
    (tmp_path / "html" / "other.html").write_text(PAGE.replace("First part", "Second part"))
    memo = tmp_path / search.SECTIONS_MEMO
    first = search.page_records(tmp_path / "html", ["pytrees", "other", "gone"], memo)
    assert len(first) == 8 and memo.is_file()
    # Readable JSON: each page's digest and records, a record's fields by name.
    pages = json.loads(memo.read_text())["pages"]
    assert sorted(pages) == ["other", "pytrees"]
    assert [r["title"] for r in pages["pytrees"][1]] == [r.title for r in first[:4]]
    parsed = []
    real = search.sections
    monkeypatch.setattr(search, "sections", lambda t, p: parsed.append(p) or real(t, p))
    (tmp_path / "html" / "other.html").write_text(PAGE.replace("First part", "Third part"))
    again = search.page_records(tmp_path / "html", ["pytrees", "other", "gone"], memo)
    assert parsed == ["other"]  # the unchanged page comes from the memo
    assert again[:4] == first[:4] and again[5].title == "3.1. Third part"
    memo.write_bytes(b"damaged")
    assert search.page_records(tmp_path / "html", ["pytrees"], memo) == first[:4]


def test_questions_lists_lead_to_the_records_they_link_to():
    records = search.sections(PAGE, "pytrees")
    # The link to a label lands on the record of the section that holds it; a link to
    # a page that is not indexed leads nowhere.
    assert search.answers(records) == {
        "pytrees.html#questions-readers-ask": ["pytrees.html#first-part"]
    }


def test_negated_words_are_the_books_own():
    records = search.sections(PAGE, "pytrees")
    assert search.negated(records) == ["indivisible"]


def test_aliases_map_old_names_to_todays():
    table = search.aliases(
        "| Old | Today | Status |\n|---|---|---|\n"
        "| `jax.tree_leaves`, `jax.tree_flatten` | `jax.tree.leaves`, `jax.tree.flatten` | removed |\n"
        "| `with mesh:` | `with jax.set_mesh(mesh):` | deprecated |\n"
        "| `jax.experimental.pjit.pjit` | `jax.jit` with `in_shardings` | deprecated |\n"
        '| `jax.jit(f, backend="cpu")` | `jax.device_put` the inputs | deprecated |\n'
        "| `jax.experimental.loops` | `lax.scan` (see {doc}`control_flow`) | removed |\n"
    )
    assert table["jax.tree_leaves"] == ["jax.tree.leaves", "jax.tree.flatten"]
    assert table["jax.experimental.pjit.pjit"] == ["jax.jit", "in_shardings"]
    assert table["jax.experimental.loops"] == ["lax.scan"]  # not the {doc} link
    assert "with" not in table and "mesh" not in table  # a keyword, a plain word
    assert "jax.jit" not in table  # still today's name in another row


def test_only_the_search_page_loads_a_search_script(tmp_path):
    head = (
        '<head><script defer src="_static/jaxguide-search.js?v=1"></script>\n'
        '<script defer src="_static/searchtools.js"></script>\n'
        '<script defer src="searchindex.js"></script>\n</head><body></body>'
    )
    chapter = search.search_scripts(head, tmp_path / "sharding.html")
    assert "script" not in chapter
    page = search.search_scripts(head, tmp_path / "search.html")
    assert "searchtools" not in page and "searchindex" not in page
    assert page.count("jaxguide-search.js") == 1
    # Where Jupyter Book did not add it, the search page gets it.
    bare = search.search_scripts("<head></head>", tmp_path / "search.html")
    assert '<script defer src="_static/jaxguide-search.js"></script>' in bare


def test_the_index_holds_one_entry_per_section(tmp_path):
    records = search.sections(PAGE, "pytrees")
    out = tmp_path / "pagefind"
    (out / "stale").mkdir(parents=True)
    count = search.write_records(records, {"jax.tree_leaves": ["jax.tree.leaves"]}, out)
    assert count == len(records) == 4
    entry = json.loads((out / "pagefind-entry.json").read_text())
    assert entry["languages"]["en"]["page_count"] == 4
    assert (out / "pagefind.js").is_file() and not (out / "stale").exists()
    assert len(list((out / "fragment").glob("*.pf_fragment"))) == 4
    tables = json.loads((out / search.ALIASES).read_text())
    assert tables["aliases"] == {"jax.tree_leaves": ["jax.tree.leaves"]}
    assert tables["negated"] == ["indivisible"]
    # The questions list and the section it links to, by their Pagefind ids.
    ids = {f.name.split(".")[0] for f in (out / "fragment").glob("*.pf_fragment")}
    [(questions, targets)] = tables["answers"].items()
    assert questions in ids and len(targets) == 1 and targets[0] in ids - {questions}
    # Each result's url is its section's anchor (the page Pagefind indexed is a scratch file).
    assert {url for _, url in search.fragment_urls(out)} == {r.url for r in records}
    # Another release of Pagefind: its fragments' layout is checked again, not assumed.
    with pytest.raises(RuntimeError, match="Pagefind 2.0.0 is installed"):
        search.fragment_urls(out, release="2.0.0")


def test_a_book_without_sections_gets_no_index(tmp_path):
    out = tmp_path / "pagefind"
    (out / "stale").mkdir(parents=True)
    assert search.write_records([], {}, out) == 0
    assert not out.exists()


def test_sphinx_builds_no_search_index_of_its_own(tmp_path):
    """The HTML builder's indexer is dropped once it is prepared, so nothing feeds or
    writes ``searchindex.js``; one left by an earlier build is deleted; other builders
    are left alone."""
    from types import SimpleNamespace

    from sphinx.builders.html import StandaloneHTMLBuilder

    class Builder(StandaloneHTMLBuilder):
        def __init__(self, outdir):  # no Sphinx application: only what the hook reads
            self.outdir = outdir
            self.prepared = None

        def prepare_writing(self, docnames):
            self.prepared = docnames
            self.indexer = "Sphinx's index builder"
            self.load_indexer(docnames)

        def load_indexer(self, docnames):
            raise AssertionError("loads the last build's index (and warns if there is none)")

    (tmp_path / "searchindex.js").write_text("Search.setIndex({})")
    builder = Builder(tmp_path)
    search.without_sphinx_index(None, builder)
    assert not (tmp_path / "searchindex.js").exists()
    builder.prepare_writing({"a", "b"})
    assert builder.prepared == {"a", "b"} and builder.indexer is None

    other = SimpleNamespace(outdir=tmp_path, prepare_writing=print, format="latex")
    (tmp_path / "searchindex.js").write_text("kept")
    search.without_sphinx_index(None, other)
    assert other.prepare_writing is print and (tmp_path / "searchindex.js").exists()


def test_token_spans_are_dropped_before_parsing_and_nothing_else_changes():
    """Highlighted code's one span per token, and inline code's span, go before the page
    is parsed (most of its tags): the words, ids and other spans stay."""
    page = (
        '<article class="bd-article"><section id="s"><h1>T</h1>'
        '<p><code class="docutils literal"><span class="pre">jax.jit</span></code> and '
        '<span class="keep" id="k">kept</span></p>'
        '<div class="highlight"><pre><span></span><span class="n">x</span>'
        '<span class="o">=</span><span class="mi">1</span></pre></div></section></article>'
    )
    stripped = search._without_token_spans(page)
    assert '<span class="keep" id="k">kept</span>' in stripped
    assert "<pre>x=1</pre>" in stripped and 'class="pre"' not in stripped
    (record,) = search.sections(page, "p")
    assert "jax.jit" in record.html and "x=1" in record.html and record.ids == {"s", "k"}
