"""The test session's rules (tests/timeline.py): the markers each test must carry, and
the order the suite runs in."""

from timeline import needlessly_marked_tests, suite_order, unmarked_book_tests


def test_a_test_that_uses_the_book_without_its_marker_is_found():
    class Item:
        def __init__(self, nodeid, fixtures, marked):
            self.nodeid, self.fixturenames, self.marked = nodeid, fixtures, marked

        def get_closest_marker(self, name):
            return object() if self.marked and name == "book" else None

    items = [
        Item("t::unit", ["tmp_path"], False),
        Item("t::marked", ["book"], True),
        Item("t::unmarked", ["book", "tmp_path"], False),
        Item("t::wheel", ["wheel_notebooks"], False),
    ]
    assert unmarked_book_tests(items) == ["t::unmarked", "t::wheel"]


def test_a_test_marked_book_or_browser_that_uses_neither_is_found():
    """The converse rule: such a test is one ``make unit`` could run, and skips."""

    class Item:
        def __init__(self, nodeid, fixtures, *markers):
            self.nodeid, self.fixturenames, self.markers = nodeid, fixtures, markers

        def get_closest_marker(self, name):
            return object() if name in self.markers else None

    items = [
        Item("t::unit", ["tmp_path"]),
        Item("t::book", ["book", "tmp_path"], "book"),
        Item("t::wheel", ["wheel_notebooks"], "book"),
        Item("t::site", ["site", "book"], "book", "browser"),  # book in the closure
        Item("t::chromium", ["browser", "tmp_path"], "book", "browser"),
        Item("t::pure", ["tmp_path"], "book"),
        Item("t::pure under a module's marks", ["tmp_path"], "book", "browser"),
        Item("t::builds", ["tmp_path"], "builds"),  # no fixture tells these apart
    ]
    assert needlessly_marked_tests(items) == ["t::pure", "t::pure under a module's marks"]


def test_the_suite_runs_tests_without_the_book_first_wheel_readers_after_and_idle_last():
    """And the readers of the browser's background checks after the other book tests."""

    class Item:
        def __init__(self, nodeid, fixtures, idle=False):
            self.nodeid, self.fixturenames, self.idle = nodeid, fixtures, idle

        def get_closest_marker(self, name):
            return object() if self.idle and name == "idle" else None

    items = [
        Item("lighthouse", ["book"], idle=True),
        Item("reproducible", ["book", "wheel_notebooks"]),
        Item("page", ["book"]),
        Item("unit", ["tmp_path"]),
        Item("notebooks", ["wheel_notebooks"]),
        Item("all pages", ["background", "site", "book"]),
        Item("browser", ["site", "browser", "book"]),
    ]
    order = [i.nodeid for i in suite_order(items)]
    assert order == [
        "unit",
        "page",
        "browser",
        "all pages",
        "reproducible",
        "notebooks",
        "lighthouse",
    ]
