"""Under CI=true every kind of skip fails the run (test/skips.py) but a
kernel's missing feature; outside CI they stay skips, each with its
reason."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

SUITE = {
    "conftest.py": "import sys\nsys.path.insert(0, %r)\n"
                   "from skips import (pytest_make_collect_report,\n"
                   "                   pytest_runtest_makereport)\n"
                   % os.path.dirname(HERE),
    "test_a.py": "import pytest\n\n"
                 "def test_needs_root():\n"
                 "    pytest.skip('needs root')\n\n"
                 "@pytest.mark.skipif(True, reason='no tool')\n"
                 "def test_marked():\n    pass\n\n"
                 "def test_runs():\n    pass\n\n"
                 "def test_kernel():\n"
                 "    from skips import kernel_lacks\n"
                 "    kernel_lacks('act_police')\n",
    "test_b.py": "import pytest\n"
                 "pytest.importorskip('no_such_module_shp')\n\n"
                 "def test_never():\n    pass\n",
}


def run(tmp_path, ci, *files):
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs",
                           "-p", "no:cacheprovider"] +
                          [str(tmp_path / f) for f in files or [""]],
                          capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)


def test_skips_fail_under_ci(tmp_path):
    said = "skipped under CI=true, where every test must run: "
    p = run(tmp_path, "true", "test_a.py")
    assert p.returncode == 1, p.stdout
    assert "1 failed, 1 passed, 1 skipped, 1 error" in \
        p.stdout.strip().splitlines()[-1], p.stdout
    assert re.search(r"^SKIPPED \[1\] .*: this kernel lacks act_police$",
                     p.stdout, re.M), p.stdout
    assert said in p.stdout and "needs root" in p.stdout and \
        "no tool" in p.stdout, p.stdout
    # a module skipped whole is an error of its collection
    p = run(tmp_path, "true", "test_b.py")
    assert p.returncode != 0, p.stdout
    assert said in p.stdout and "no_such_module_shp" in p.stdout, p.stdout


def test_skips_stay_skips_outside_ci(tmp_path):
    for ci in (None, "false"):
        p = run(tmp_path, ci)
        assert p.returncode == 0, p.stdout
        assert "1 passed, 4 skipped" in p.stdout, p.stdout
