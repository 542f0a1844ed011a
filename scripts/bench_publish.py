#!/usr/bin/python3
"""Writes one benchmark run into docs/benchmarks.md.

docs/benchmarks.md is generated: one section per benchmark, keyed by the
program that measures (bench-forward for scripts/bench-forward.sh,
bench_bands for `scripts/bench-micro.sh bands`, which runs
build/bench/bench_bands), holding what its latest run printed, the
command line it ran with (its arguments and the SHP_BENCH_* / FID_*
settings), the machine and the date. A run replaces its benchmark's
section whatever its arguments, or appends one; the other sections stay.
Each section keeps at most MAX_LINES lines of output, and the file at
most MAX_DOC_LINES: past that the longest outputs are cut further (their
first third and last two thirds kept; the command prints them whole).
How a figure moved is in git (`git log -p docs/benchmarks.md`), not in
the file.

Usage: bench_publish.py TITLE COMMAND OUTPUT-FILE [DOC]
       bench_publish.py --tidy [DOC]
  TITLE: the section's heading; COMMAND: the command line (its program
  is the key); OUTPUT-FILE: what it printed (ANSI sequences and CRs
  removed). --tidy rewrites DOC in this form: a benchmark's sections
  folded into its latest, the lengths capped.
"""
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys

BEGIN = "<!-- bench: %s -->"
END = "<!-- /bench -->"
SECTION = re.compile(r"<!-- bench: (.*?) -->\n(.*?)\n?<!-- /bench -->\n*",
                     re.S)
CUT = re.compile(r"^\.\.\. \((\d+) (?:more )?lines(?: cut[^)]*)?\)$")
# a section's output beyond this is cut; the file beyond MAX_DOC_LINES
# cuts its longest outputs further, down to MIN_LINES each
MAX_LINES = 30
MAX_DOC_LINES = 299
MIN_LINES = 4
STAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d) UTC")


def key_of(command):
    """The benchmark a command line runs: its program's name, after the
    VAR=value settings; bench-micro.sh NAME runs bench_NAME. A key is its
    own key, so a section written before keys were programs (its whole
    command line in the marker) folds into its program's."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words.pop(0)
    if not words:
        return command.strip()
    prog = re.sub(r"\.(sh|py)$", "", os.path.basename(words[0]))
    if prog == "bench-micro" and len(words) > 1:
        return "bench_" + words[1]
    return prog


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


class Section:
    """title, command, stamp (machine, date, build), and the output as
    head, tail and how many lines were cut between them."""

    def __init__(self, title, command, stamp, lines):
        self.title, self.command, self.stamp = title, command, stamp
        self.key = key_of(command)
        self.head, self.tail, self.cut = lines, [], 0
        for i, line in enumerate(lines):
            m = CUT.match(line)
            if m:
                self.head, self.tail = lines[:i], lines[i + 1:]
                self.cut = int(m.group(1))
                break

    def kept(self):
        return len(self.head) + len(self.tail) + (1 if self.cut else 0)

    def cap(self, n):
        """At most n lines of output (the cut's line among them)."""
        n = max(n, MIN_LINES)
        if self.kept() <= n:
            return
        keep = n - 1
        if not self.cut:
            lines, t = self.head, keep - keep // 3
            self.head, self.tail = lines[:keep // 3], lines[len(lines) - t:]
            self.cut = len(lines) - keep
            return
        h = min(len(self.head), keep // 3)
        t = min(len(self.tail), keep - h)
        h = min(len(self.head), keep - t)
        self.cut += len(self.head) - h + len(self.tail) - t
        self.head, self.tail = self.head[:h], self.tail[len(self.tail) - t:]

    def when(self):
        m = STAMP.search(self.stamp)
        return m.group(1) if m else ""

    def text(self):
        tick = "``" if "`" in self.command else "`"
        out = self.head + (["... (%d lines cut: the command prints them)"
                            % self.cut] if self.cut else []) + self.tail
        return "\n".join(
            [BEGIN % self.key, "## " + self.title,
             "%s%s%s: %s" % (tick, self.command, tick, self.stamp),
             "```"] + out + ["```", END])


def parse(marker, body):
    """A section as this script writes it, or as it wrote them before:
    the command in the marker and indented under the heading, the stamp
    a paragraph of its own."""
    lines = body.split("\n")
    title, command, stamp, out = marker, marker, "", []
    fence = [i for i, l in enumerate(lines) if l.startswith("```")]
    if len(fence) >= 2:
        out = lines[fence[0] + 1:fence[-1]]
        lines = lines[:fence[0]]
    for l in lines:
        if l.startswith("## "):
            title = l[3:]
        elif l.startswith("    ") and command == marker:
            command = l.strip()
        elif l.startswith("`") and "`: " in l:
            tick = "``" if l.startswith("``") else "`"
            command, stamp = l[len(tick):].split(tick + ": ", 1)
        elif l.strip() and not stamp:
            stamp = l.strip()
    return Section(title, command, stamp, out)


def tidy(text, new=None):
    """The doc's text with new (a Section) in place of its benchmark's
    sections, each benchmark's sections folded into its latest (at the
    first's place), and every output capped so the file stays within
    MAX_DOC_LINES."""
    head = SECTION.split(text, maxsplit=1)[0].rstrip("\n")
    sections, where = [], {}
    for m in SECTION.finditer(text):
        s = parse(m.group(1), m.group(2))
        if new is not None and s.key == new.key:
            s = new
        if s.key in where:
            i = where[s.key]
            if s is not new and s.when() >= sections[i].when():
                sections[i] = s
            continue
        where[s.key] = len(sections)
        sections.append(s)
    if new is not None and new.key not in where:
        sections.append(new)
    for s in sections:
        s.cap(MAX_LINES)

    def render():
        return head + "\n\n" + "\n\n".join(s.text() for s in sections) + \
            "\n"
    out = render()
    while out.count("\n") > MAX_DOC_LINES:
        longest = max(sections, key=Section.kept)
        if longest.kept() <= MIN_LINES:
            sys.stderr.write("bench_publish: %d lines, over %d, with every "
                             "output at %d\n" % (out.count("\n"),
                                                 MAX_DOC_LINES, MIN_LINES))
            break
        longest.cap(longest.kept() - 1)
        out = render()
    return out


def write(doc, text):
    tmp = doc + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, doc)


def publish(doc, title, command, text):
    lines = [l.rstrip() for l in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    when = datetime.datetime.now(datetime.timezone.utc)
    stamp = "%s; %s, build %s." % (
        machine(), when.strftime("%Y-%m-%d %H:%M UTC"), commit())
    # a CUT-like line of the output's own is not the cut's
    lines = ["  " + l if CUT.match(l) else l for l in lines]
    new = Section(title, command, stamp, lines)
    with open(doc) as f:
        old = f.read()
    write(doc, tidy(old, new))
    return new.key


def main():
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                           "docs", "benchmarks.md")
    if len(sys.argv) in (2, 3) and sys.argv[1] == "--tidy":
        doc = sys.argv[2] if len(sys.argv) == 3 else default
        with open(doc) as f:
            write(doc, tidy(f.read()))
        return
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__.split("\n\n")[-1])
    title, command, path = sys.argv[1:4]
    doc = sys.argv[4] if len(sys.argv) == 5 else default
    if "-->" in command or "\n" in command or "\n" in title:
        sys.exit("bench_publish: a command may not hold '-->' or a "
                 "newline, a title no newline")
    with open(path, errors="replace") as f:
        text = f.read()
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text).replace("\r", "")
    key = publish(doc, title, command, text)
    print("published to %s: %s (%s)" % (os.path.relpath(doc), key, command))


if __name__ == "__main__":
    main()
