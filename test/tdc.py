"""The kernel's tc selftests (tdc) for the queue kinds we have, as data
(test/data/tdc_qdiscs.json: each case's id, kind, arguments, expected exit
code, pattern and match count as the kernel's files have them), and how a
case reads against dpdk-shaper: the same acceptance or refusal, and the
pattern found as often in our `show qdisc` output, the parts only Linux has
(dev, handle, root/parent, refcnt) set aside on both sides."""
import collections
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "tdc_qdiscs.json")

# the keyword that sets each kind's stage (`set KEY 0 ...`, --KEY)
QUEUE_KINDS = ("fq_codel", "prio", "pfifo_fast")


def cases():
    with open(DATA) as f:
        return json.load(f)["cases"]


def key(kind):
    return "queue" if kind in QUEUE_KINDS else kind


def text(case):
    """The stage's text for its key: a queue's starts with its kind."""
    if case["kind"] in QUEUE_KINDS:
        return (case["kind"] + " " + case["args"]).strip()
    return case["args"]


# a qdisc's head: tc's (`qdisc KIND H: [dev D] root refcnt N|parent P`)
# or the offline tool's summary lines (`qdisc:  KIND H: root`, then
# `  KIND H: parent P` under it)
HEAD = re.compile(r"^(?:qdisc:\s+|qdisc |\s+)(\S+) [0-9a-f]+: (?:dev \S+ )?"
                  r"(?:root(?: refcnt \d+)?|parent \S+) ?", re.M)
# the same in a tdc pattern (a regular expression)
PAT_HEAD = re.compile(r"^qdisc (\S+) [0-9a-f]+: root(?: refcnt \[0-9\]\+)?"
                      r" ?")


def normalise(output):
    """Every qdisc head to `qdisc KIND `, the rest as it is."""
    return HEAD.sub(lambda m: "qdisc %s " % m.group(1), output)


def pattern(case):
    """The case's pattern with the Linux-only head set aside."""
    return PAT_HEAD.sub(lambda m: "qdisc %s " % m.group(1),
                        case["pattern"])


def verdict(case, accepted, output):
    """None if the case passes, else why not."""
    want_ok = int(case["exit"]) == 0
    if accepted != want_ok:
        return "%s, tc %s" % ("accepted" if accepted else "refused",
                              "accepts" if want_ok else "refuses")
    n = len(re.findall(pattern(case), normalise(output)))
    if n != int(case["count"]):
        return "pattern %r found %d times, not %s in:\n%s" % (
            pattern(case), n, case["count"], output)
    return None


def params(line):
    """A qdisc head's parameters (what follows root/parent)."""
    m = HEAD.match(line)
    return line[m.end():].strip() if m else None


def report(results):
    """results: [(case, verdict)] -> 'netem 12/12, ...' by kind."""
    tot = collections.OrderedDict()
    for c, v in results:
        ok, n = tot.get(c["kind"], (0, 0))
        tot[c["kind"]] = (ok + (v is None), n + 1)
    return ", ".join("%s %d/%d" % (k, ok, n) for k, (ok, n) in tot.items())
