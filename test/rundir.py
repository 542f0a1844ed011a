"""The EAL's run directories (/var/run/dpdk/PREFIX) that tests create.

dpdk-shaper removes its own at a clean exit; one killed by a test, a
crashing one, the unit tests' and dpdk-testpmd's remain. A suite names its
prefixes with a tag of its own and calls sweep(tag) once its processes are
gone: every directory of that tag whose config file nobody locks (the EAL
primary holds a lock on it while it runs) is removed.
"""
import fcntl
import glob
import os
import shutil

RUN = "/var/run/dpdk"


def in_use(path):
    """A live primary process holds a record lock on PATH/config."""
    try:
        fd = os.open(os.path.join(path, "config"), os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)   # closing drops the lock we may have taken
    return False


def forget(prefix):
    """Remove the run directory of PREFIX if its process is gone."""
    path = os.path.join(RUN, prefix)
    if os.path.isdir(path) and not in_use(path):
        shutil.rmtree(path, ignore_errors=True)


def sweep(tag):
    """forget() every prefix starting with TAG; the ones left in use."""
    left = []
    for path in glob.glob(os.path.join(RUN, glob.escape(tag) + "*")):
        forget(os.path.basename(path))
        if os.path.isdir(path):
            left.append(path)
    return left
