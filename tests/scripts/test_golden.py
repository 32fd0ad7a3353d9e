"""End-to-end: the real binary over the committed fixture tree; /metrics must equal the golden
file (volatile series skipped) and pass `promtool check metrics`.

Regenerate after an intended change:  LOADWATCH_UPDATE_GOLDEN=1 python3 tests/scripts/test_golden.py
(or `python3 tests/scripts/test_golden.py -u`), then review the diff of
tests/fixtures/golden/metrics.txt like code.
"""
import difflib
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import SOURCE_DIR, Loadwatch, promtool_check  # noqa: E402
import lwtest  # noqa: E402

FIXTURES = os.path.join(SOURCE_DIR, "tests", "fixtures")
GOLDEN = os.path.join(FIXTURES, "golden", "metrics.txt")
# Series whose value depends on the moment or the build, not on the fixture tree.
VOLATILE = ("loadwatch_collector_duration_seconds", "loadwatch_last_sample_timestamp_seconds",
            "loadwatch_build_info",
            "loadwatch_http_max_connections")  # capped by this machine's RLIMIT_NOFILE
UPDATE = os.environ.get("LOADWATCH_UPDATE_GOLDEN") == "1" or "-u" in sys.argv


def stable(text):
    return "".join(line + "\n" for line in text.splitlines()
                   if not any(line.startswith(v) or line.startswith("# HELP " + v) or
                              line.startswith("# TYPE " + v) for v in VOLATILE))


class Golden(unittest.TestCase):
    def test_metrics_over_fixtures(self):
        args = ["--path.procfs=" + os.path.join(FIXTURES, "proc"),
                "--path.sysfs=" + os.path.join(FIXTURES, "sys"),
                "--tcp.force-procfs",
                "--sample.interval=1h",  # one sample: the one taken before the port opens
                # A comm with spaces and ')' must parse: the target matches it by comm.
                "--target=odd=comm:a b) c",
                "--target=python=comm:python3",
                "--target=kthreadd=pid:2",
                "--target=absent=pid:4194303",
                "--no-collector.sources"]
        with Loadwatch(args) as lw:
            text = lw.metrics_text()
        ok, out = promtool_check(text)
        self.assertTrue(ok, "promtool check metrics:\n" + out)
        got = stable(text)
        if UPDATE:
            os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
            with open(GOLDEN, "w") as f:
                f.write(got)
            return
        with open(GOLDEN) as f:
            want = f.read()
        if got != want:
            diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                "golden", "got"))
            self.fail("/metrics differs from %s (regenerate with -u if intended):\n%s" %
                      (GOLDEN, diff[:8000]))


if __name__ == "__main__":
    sys.argv = [a for a in sys.argv if a != "-u"]
    lwtest.main(verbosity=2)
