"""Under CI (CI=true) a skip is a failure, but for a kernel feature.

A test skips only for what the machine lacks (root, a tool, a kernel
feature), with the reason printed. A CI run that lacks root or a tool has
not run the test, and must not pass for it: each suite's conftest imports
the two hooks below, which turn every skip (pytest.skip, a skipif mark, an
importorskip at a module's top) into a failure that says why, when the
environment has CI=true. A kernel without a module (this machine's has no
act_police) is beyond what the project can install: kernel_lacks() skips
for it, and stays a skip under CI, its reason printed.
"""
import os

import pytest

KERNEL = "this kernel lacks "


def kernel_lacks(what):
    """Skip: the running kernel has no `what` (a module, a qdisc)."""
    pytest.skip(KERNEL + what)


def under_ci():
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _fail(rep):
    lr = rep.longrepr
    reason = lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)
    if KERNEL in reason:
        return
    rep.outcome = "failed"
    rep.longrepr = ("skipped under CI=true, where every test must run: %s"
                    % reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    rep = (yield).get_result()
    if under_ci() and rep.skipped and not hasattr(rep, "wasxfail"):
        _fail(rep)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    rep = (yield).get_result()
    if under_ci() and rep.skipped:
        _fail(rep)
