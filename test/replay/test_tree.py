"""The tree's shape that issue 57 fixes: files of one job in app/ and
tools/ (none over 800 lines), docs that are a reference."""
import glob
import os

from conftest import REPO

MAX_PROGRAM_FILE = 800


def lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


def test_no_program_file_over_800_lines():
    files = [p for d in ("app", "tools")
             for p in glob.glob(os.path.join(REPO, d, "**", "*.[ch]"),
                                recursive=True)]
    assert len(files) > 20, files   # the tree was found
    over = {os.path.relpath(p, REPO): n for p in files
            if (n := lines(p)) > MAX_PROGRAM_FILE}
    assert not over, "split by job: %s" % over


def test_docs_are_a_reference():
    """benchmarks.md is the bench scripts' tables (at most 300 lines),
    architecture.md the invariants and pictures (at most 400)."""
    for doc, most in (("benchmarks.md", 300), ("architecture.md", 400)):
        n = lines(os.path.join(REPO, "docs", doc))
        assert 20 < n <= most, (doc, n)
