"""scripts/bench_publish.py, which writes docs/benchmarks.md: one section
a benchmark (its program), the latest run's command line shown, the file
under 300 lines however long the outputs."""
import os
import re
import subprocess

from conftest import REPO

PUBLISH = os.path.join(REPO, "scripts", "bench_publish.py")
PY = "/usr/bin/python3"
HEAD = "# Benchmarks\n\nThe head, kept as it is.\n"


def publish(tmp_path, doc, title, command, lines):
    out = tmp_path / "out.txt"
    out.write_text("".join("%s\n" % l for l in lines))
    r = subprocess.run([PY, PUBLISH, title, command, str(out), str(doc)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return doc.read_text()


def markers(text):
    return re.findall(r"<!-- bench: (.*?) -->", text)


def test_a_run_with_other_arguments_replaces_its_benchmark(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(HEAD)
    title = "Forwarding against dpdk-testpmd (bench-forward)"
    publish(tmp_path, doc, "Band choice (bench_bands)",
            "scripts/bench-micro.sh bands", ["bands 1"])
    publish(tmp_path, doc, title, "scripts/bench-forward.sh 6 2",
            ["first run"])
    text = publish(tmp_path, doc, title,
                   "SHP_BENCH_QUEUES='pfifo_fast fq_codel' "
                   "scripts/bench-forward.sh 5 3 -- --mbufs 65536",
                   ["second run"])
    assert text.startswith(HEAD)
    assert markers(text) == ["bench_bands", "bench-forward"]
    assert text.count("## " + title) == 1
    assert "second run" in text and "first run" not in text
    assert "`SHP_BENCH_QUEUES='pfifo_fast fq_codel' scripts/bench-forward.sh" \
        " 5 3 -- --mbufs 65536`: " in text
    assert "bench-forward.sh 6 2" not in text
    # another micro-benchmark is another benchmark
    text = publish(tmp_path, doc, "Counters (bench_counters)",
                   "scripts/bench-micro.sh counters", ["counters 1"])
    assert markers(text) == ["bench_bands", "bench-forward",
                             "bench_counters"]
    assert "bands 1" in text and "second run" in text


def test_sections_keyed_by_command_fold_into_the_latest(tmp_path):
    """A file as the script wrote it before (a section per command line)
    keeps one section a benchmark, the latest run's, at the first's
    place."""
    def old(cmd, when, what):
        return ("<!-- bench: %s -->\n## Forwarding (bench-forward)\n\n"
                "    %s\n\nAMD EPYC; load average 1.00 at the end; "
                "2026-12-07 %s UTC, build abc.\n\n```\n%s\n```\n"
                "<!-- /bench -->\n\n" % (cmd, cmd, when, what))
    doc = tmp_path / "benchmarks.md"
    doc.write_text(HEAD + "\n" +
                   old("scripts/bench-forward.sh 5 3", "06:49", "older") +
                   old("scripts/bench-micro.sh bands", "06:00", "bands") +
                   old("SHP_BENCH_CAPTURE=1 scripts/bench-forward.sh 3 5",
                       "13:32", "latest") +
                   old("scripts/bench-forward.sh 5 5", "13:31", "middle"))
    r = subprocess.run([PY, PUBLISH, "--tidy", str(doc)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = doc.read_text()
    assert markers(text) == ["bench-forward", "bench_bands"]
    assert "latest" in text
    assert "older" not in text and "middle" not in text
    assert "`SHP_BENCH_CAPTURE=1 scripts/bench-forward.sh 3 5`: AMD EPYC" \
        in text


def test_the_file_stays_under_300_lines(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(HEAD)
    names = ["n%02d" % i for i in range(20)]
    for n in names:
        text = publish(tmp_path, doc, "Micro %s (bench_%s)" % (n, n),
                       "scripts/bench-micro.sh " + n,
                       ["%s line %d" % (n, i) for i in range(60)])
    assert markers(text) == ["bench_" + n for n in names]
    assert text.count("\n") < 300
    # each output keeps its first and last lines, the cut said between
    for n in names:
        assert "%s line 0\n" % n in text and "%s line 59\n" % n in text
    assert len(re.findall(r"^\.\.\. \(\d+ lines cut", text, re.M)) == 20
    # one long output alone is cut to its own cap only
    doc.write_text(HEAD)
    text = publish(tmp_path, doc, "Long (bench-ab)",
                   "scripts/bench-ab.sh a b", ["l%d" % i for i in range(100)])
    body = text.split("```\n")[1]
    assert body.count("\n") == 30
    assert "... (71 lines cut: the command prints them)" in body
