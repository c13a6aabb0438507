"""jaxguide_build.toc: the table of contents, read as Jupyter Book reads it."""

import pytest


def write_book(tmp_path, toc: str, pages=("intro", "a", "b", "c")) -> tuple:
    book = tmp_path / "book"
    book.mkdir(parents=True)
    for p in pages:
        (book / f"{p}.md").write_text(f"# {p}\n")
    (tmp_path / "_toc.yml").write_text(toc)
    return tmp_path / "_toc.yml", book


def test_toc_forms(tmp_path):
    from jaxguide_build import toc

    flat = write_book(
        tmp_path / "flat", "format: jb-book\nroot: intro\nchapters:\n- file: a\n- file: b\n"
    )
    assert toc.pages(*flat) == ["intro", "a", "b"]
    nested = write_book(
        tmp_path / "nested",
        (
            "format: jb-book\nroot: intro\nparts:\n- caption: One\n  chapters:\n  - file: a\n"
            "    sections:\n    - file: b\n- caption: Two\n  chapters:\n  - file: c\n"
        ),
    )
    assert toc.pages(*nested) == ["intro", "a", "b", "c"]
    assert [(p.caption, p.pages) for p in toc.parts(*nested)] == [
        ("One", ("a", "b")),
        ("Two", ("c",)),
    ]
    missing = write_book(
        tmp_path / "missing", "format: jb-book\nroot: intro\nchapters:\n- file: nope\n"
    )
    with pytest.raises(toc.TocError, match=r"no source file in book/: nope"):
        toc.pages(*missing)
    bad = write_book(tmp_path / "bad", "format: jb-book\nchapters: [}\n")
    with pytest.raises(toc.TocError, match="cannot be read"):
        toc.pages(*bad)
    assert toc.pages()[0] == "index" and "numpy" in toc.pages()  # this book's own toc
