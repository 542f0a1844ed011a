"""dpdk-dumpcap captures a running shaper (rte_pdump_init) on hugepages.

Needs root to reserve hugepages; skipped, saying why, where they cannot be
reserved. Restores nr_hugepages (and unmounts hugetlbfs if it mounted it).
"""
import glob
import os
import shutil
import subprocess

import pytest

from conftest import NULL_VDEVS, prefix, shaper_cmd

pexpect = pytest.importorskip("pexpect")
from pexpect.popen_spawn import PopenSpawn  # noqa: E402

NR = "/proc/sys/vm/nr_hugepages"
MNT = "/dev/hugepages"
DUMPCAP = shutil.which("dpdk-dumpcap") or "/usr/bin/dpdk-dumpcap"


def hugetlbfs_mounted(path):
    with open("/proc/mounts") as f:
        return any(l.split()[1] == path and l.split()[2] == "hugetlbfs"
                   for l in f)


@pytest.fixture
def hugepages():
    if os.geteuid() != 0:
        pytest.skip("hugepages: not root, cannot reserve them")
    if not os.path.exists(DUMPCAP):
        pytest.skip("dpdk-dumpcap missing (Debian package dpdk)")
    with open(NR) as f:
        saved = int(f.read())
    mounted = False
    try:
        if not hugetlbfs_mounted(MNT):
            os.makedirs(MNT, exist_ok=True)
            r = subprocess.run(["mount", "-t", "hugetlbfs", "nodev", MNT],
                               capture_output=True, text=True, timeout=20)
            if r.returncode != 0:
                pytest.skip("hugepages: cannot mount hugetlbfs on %s: %s"
                            % (MNT, r.stderr.strip()))
            mounted = True
        try:
            with open(NR, "w") as f:
                f.write("%d\n" % max(saved, 512))
        except OSError as e:
            pytest.skip("hugepages: cannot write %s: %s" % (NR, e))
        with open(NR) as f:
            got = int(f.read())
        if got < 256:
            pytest.skip("hugepages: only %d of 512 could be reserved" % got)
        yield
    finally:
        with open(NR, "w") as f:
            f.write("%d\n" % saved)
        if mounted:
            subprocess.run(["umount", MNT], timeout=20)


def test_dumpcap_captures_running_shaper(tmp_path, hugepages):
    pre = prefix()
    cmd = shaper_cmd(NULL_VDEVS, ["-i", "--netem", "delay 1ms"],
                     file_prefix=pre, huge=True)
    cmd[cmd.index("--no-pci"):cmd.index("--no-pci")] = ["-m", "256"]
    c = PopenSpawn(cmd, encoding="utf-8", timeout=60)
    try:
        c.expect_exact("workers")
        out = tmp_path / "cap.pcapng"
        r = subprocess.run([DUMPCAP, "--file-prefix=" + pre, "-i",
                            "net_null1", "-c", "200", "-w", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=90)
        assert r.returncode == 0, r.stdout
        data = out.read_bytes()
        assert data[:4] == b"\x0a\x0d\x0d\x0a", "not a pcapng file"
        # enhanced packet blocks (type 6): at least the 200 asked for
        n, off = 0, 0
        while off + 8 <= len(data):
            btype = int.from_bytes(data[off:off + 4], "little")
            blen = int.from_bytes(data[off + 4:off + 8], "little")
            if blen < 12:
                break
            n += btype == 6
            off += blen
        assert n >= 200, (n, r.stdout)
        c.sendline("quit")
        c.expect(pexpect.EOF)
        assert c.wait() == 0
    finally:
        if c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait()
        for f in glob.glob(os.path.join(MNT, pre + "map_*")):
            os.unlink(f)
