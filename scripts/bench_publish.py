#!/usr/bin/python3
"""Writes one benchmark run into docs/benchmarks.md.

docs/benchmarks.md is generated: one section per benchmark command (the
script or program, its arguments and the SHP_BENCH_* / FID_* settings it
ran with), holding what that command printed on its latest run, with the
machine and the date. A run replaces its command's section, or appends
one; the sections of other commands stay. How a figure moved is in git
(`git log -p docs/benchmarks.md`), not in the file.

Usage: bench_publish.py TITLE COMMAND OUTPUT-FILE [DOC]
  TITLE: the section's heading; COMMAND: the command line, the key;
  OUTPUT-FILE: what it printed (ANSI sequences and CRs removed).
"""
import datetime
import os
import platform
import re
import subprocess
import sys

BEGIN = "<!-- bench: %s -->"
END = "<!-- /bench -->"
# a run that printed more is cut (the head kept) so the file stays a
# reference: the whole output is the command's to print again
MAX_LINES = 40


def machine():
    model, cpus = "unknown CPU", os.cpu_count()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        dpdk = subprocess.run(["pkg-config", "--modversion", "libdpdk"],
                              capture_output=True, text=True,
                              timeout=10).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        dpdk = "?"
    load = os.getloadavg()[0]
    return ("%s, %d CPUs, Linux %s, DPDK %s; load average %.2f at the "
            "end" % (model, cpus, platform.release(), dpdk, load))


def commit():
    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return r.stdout.strip() + ("+" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "?"


def section(title, command, text):
    lines = [l.rstrip() for l in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    cut = len(lines) - MAX_LINES
    if cut > 0:
        lines = lines[:MAX_LINES] + ["... (%d more lines)" % cut]
    when = datetime.datetime.now(datetime.timezone.utc)
    return "\n".join(
        [BEGIN % command, "## " + title, "", "    " + command, "",
         "%s; %s, build %s." % (machine(), when.strftime("%Y-%m-%d %H:%M UTC"),
                                commit()),
         "", "```"] + lines + ["```", END])


def publish(doc, title, command, text):
    with open(doc) as f:
        old = f.read()
    new = section(title, command, text)
    pat = re.compile(re.escape(BEGIN % command) + r".*?" + re.escape(END),
                     re.S)
    if pat.search(old):
        out = pat.sub(lambda _: new, old, count=1)
    else:
        out = old.rstrip("\n") + "\n\n" + new + "\n"
    tmp = doc + ".tmp"
    with open(tmp, "w") as f:
        f.write(out)
    os.replace(tmp, doc)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__.split("\n\n")[-1])
    title, command, path = sys.argv[1:4]
    doc = sys.argv[4] if len(sys.argv) == 5 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "docs",
        "benchmarks.md")
    if "-->" in command or "\n" in command:
        sys.exit("bench_publish: a command may not hold '-->' or a newline")
    with open(path, errors="replace") as f:
        text = f.read()
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text).replace("\r", "")
    publish(doc, title, command, text)
    print("published to %s: %s" % (os.path.relpath(doc), command))


if __name__ == "__main__":
    main()
