"""The time a process's threads lost to the host, as the kernel saw it.

A timing test may excuse what the machine took from the program under
test, but never by the program's own account of it (a program whose clock
or counters are wrong would excuse itself). Two of the kernel's figures:

- a thread's run-queue wait (/proc/PID/task/TID/schedstat, its second
  field: ns runnable but not running, i.e. another task had its CPU) and
  its preemptions (nonvoluntary_ctxt_switches: each begins such a wait);
- steal (/proc/stat, the 8th figure of each cpuN line: time the
  hypervisor ran something else on that vCPU), which the thread counts
  as its own run time; a thread is charged the most any CPU it may run
  on lost, over the same window.

Watch(pid) samples from its start (or from the process's start, for a
process the caller has just spawned) until stop(); a sampler thread keeps
each thread's last figures, so a process that exits is measured up to
its last sample (every 20 ms).

What a test may excuse is capped by a figure written in the test: lost
time beyond the cap fails the test rather than widening its tolerance.
"""
import os
import threading
import time

SAMPLE_S = 0.02
USER_HZ = os.sysconf("SC_CLK_TCK")


def steal_ns():
    """{cpu index: steal ns so far}"""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                v = line.split()
                out[int(v[0][3:])] = int(v[8]) * 10**9 // USER_HZ
    return out


def _cpus(spec):
    got = set()
    for part in spec.split(","):
        a, _, b = part.partition("-")
        got.update(range(int(a), int(b or a) + 1))
    return got


def thread_figures(pid):
    """{tid: (comm, run ns, wait ns, preemptions, cpus)} of a live process."""
    out = {}
    base = "/proc/%d/task" % pid
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for tid in tids:
        d = "%s/%s/" % (base, tid)
        try:
            run_ns, wait_ns, _ = (int(x) for x in
                                  open(d + "schedstat").read().split())
            comm = open(d + "comm").read().strip()
            inv, cpus = 0, set()
            for line in open(d + "status"):
                if line.startswith("nonvoluntary_ctxt_switches:"):
                    inv = int(line.split()[1])
                elif line.startswith("Cpus_allowed_list:"):
                    cpus = _cpus(line.split()[1])
        except (OSError, ValueError):
            continue
        out[int(tid)] = (comm, run_ns, wait_ns, inv, cpus)
    return out


def favour(pid, nice):
    """Give a process that leads a session of its own (Popen's
    start_new_session) the weight of `nice` against other sessions:
    where the kernel groups each session's tasks (sched_autogroup, on by
    default), a task's own nice weighs only against its session's, so a
    poller at -10 beside another session's busy task got half a CPU."""
    try:
        with open("/proc/%d/autogroup" % pid, "w") as f:
            f.write(str(nice))
    except OSError:
        pass          # no autogroups, or not allowed: the task's own nice


class Lost:
    """The figures of one window: elapsed_s, and per thread
    ("comm/tid") run_s, wait_s, steal_s, preempted, lost_s."""

    def __init__(self, elapsed_s, threads):
        self.elapsed_s = elapsed_s
        self.threads = threads

    def busy(self, share=0.5):
        """The threads that ran at least `share` of the window (the
        pollers; a thread asleep loses nothing a test measures)."""
        return {k: v for k, v in self.threads.items()
                if v["run_s"] + v["wait_s"] >= share * self.elapsed_s}

    def worst_s(self):
        return max([v["lost_s"] for v in self.busy().values()] + [0.0])

    def fraction(self):
        """The largest share of the window a polling thread lost."""
        return self.worst_s() / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def __repr__(self):
        return "host took (kernel's figures, %.2f s window): %s" % (
            self.elapsed_s, {k: {f: round(x, 4) if isinstance(x, float)
                                 else x for f, x in v.items()}
                             for k, v in self.busy(0.05).items()})


class Watch:
    """Watch(pid).start() ... .stop() -> Lost. from_spawn=True: the
    process was just spawned, its threads' figures count from 0."""

    def __init__(self, pid, from_spawn=False):
        self.pid = pid
        self.from_spawn = from_spawn
        self.first, self.last = {}, {}
        self._stop = threading.Event()
        self._thread = None

    def _sample(self):
        now = thread_figures(self.pid)
        for tid, f in now.items():
            if tid not in self.first:
                self.first[tid] = (f[0], 0, 0, 0, f[4]) if (
                    self.from_spawn or self.started) else f
            self.last[tid] = f
        return now

    def start(self, sample=False):
        """sample: keep sampling in a thread (for a process that will
        exit before stop())."""
        self.started = False
        self.t0 = time.monotonic()
        self.steal0 = steal_ns()
        self._sample()
        self.started = True
        if sample:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def _loop(self):
        while not self._stop.wait(SAMPLE_S):
            if not self._sample() and not os.path.exists(
                    "/proc/%d" % self.pid):
                break

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        else:
            self._sample()
        elapsed = time.monotonic() - self.t0
        steal1 = steal_ns()
        stolen = {c: steal1[c] - self.steal0.get(c, steal1[c])
                  for c in steal1}
        threads = {}
        for tid, (comm, run1, wait1, inv1, cpus) in self.last.items():
            _, run0, wait0, inv0, _ = self.first[tid]
            st = max([stolen.get(c, 0) for c in cpus] + [0]) / 1e9
            wait = (wait1 - wait0) / 1e9
            threads["%s/%d" % (comm, tid)] = {
                "run_s": (run1 - run0) / 1e9, "wait_s": wait,
                "steal_s": st, "preempted": inv1 - inv0,
                "lost_s": wait + st}
        return Lost(elapsed, threads)
