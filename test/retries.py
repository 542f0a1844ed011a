"""Passes that needed a second try are said, not hidden.

A timing test that reruns a failed measurement (a loaded machine, a late
kernel) prints every try's figures; a pass on a later try is written, one
line each, to the file SHP_TEST_RETRIED names (scripts/test.sh sets it and
counts the lines into its closing summary as "N retried")."""
import os


def current_test():
    return os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]


def passed_after_retry(tries, figures):
    """The test passed on try `tries`; figures: one line per try."""
    line = "%s: passed on try %d: %s" % (current_test(), tries,
                                         " | ".join(figures))
    print("retried pass: " + line)
    path = os.environ.get("SHP_TEST_RETRIED")
    if path:
        with open(path, "a") as f:
            f.write(line.replace("\n", " ") + "\n")
