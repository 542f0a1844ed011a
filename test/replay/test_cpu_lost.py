"""cpu_lost.py measures what the host took from a process by the kernel's
figures alone: two busy processes on one CPU each wait about half the
time, one alone hardly at all."""
import os
import subprocess
import sys
import time


import cpu_lost

SPIN = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < %s: pass"


def spin(cpu, s):
    return subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c",
                             SPIN % s])


def test_two_on_one_cpu_wait_half():
    cpu = min(os.sched_getaffinity(0))
    a, b = spin(cpu, 1.5), spin(cpu, 1.5)
    w = cpu_lost.Watch(a.pid, from_spawn=True).start(sample=True)
    try:
        time.sleep(1.0)
        lost = w.stop()
    finally:
        a.wait(timeout=30)
        b.wait(timeout=30)
    (t,) = lost.busy().values()
    # each runs about half of the time and waits the other half (other
    # load on the CPU only makes the wait longer)
    assert t["wait_s"] >= 0.3 * lost.elapsed_s, lost
    assert t["preempted"] > 0, lost
    assert lost.fraction() >= 0.3, lost


def test_a_sleeper_loses_nothing():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    w = cpu_lost.Watch(p.pid).start(sample=True)
    p.wait(timeout=30)
    lost = w.stop()
    assert lost.busy() == {} and lost.fraction() == 0.0, lost
