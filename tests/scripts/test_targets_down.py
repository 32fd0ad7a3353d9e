"""A down target: while nothing matches (loadwatch_target_up 0) its per-process gauges are
absent, not 0, so trends over a window never mix a restart's zeros in; target_up,
target_processes and the _total counters stay. loadwatch_process_start_time_seconds is the
start of the current process and moves forward after a kill and restart."""
import os
import subprocess
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, promtool_check  # noqa: E402
import lwtest  # noqa: E402

GAUGES = [
    "loadwatch_process_resident_memory_bytes",
    "loadwatch_process_resident_memory_peak_bytes",
    "loadwatch_process_virtual_memory_bytes",
    "loadwatch_process_swap_bytes",
    "loadwatch_process_open_fds",
    "loadwatch_process_max_fds",
    "loadwatch_process_fd_usage_ratio",
    "loadwatch_process_threads",
    "loadwatch_process_start_time_seconds",
    "loadwatch_process_tcp_connections",
]
KEPT = [
    "loadwatch_target_up",
    "loadwatch_target_processes",
    "loadwatch_target_restarts_total",
    "loadwatch_target_partial_reads_total",
    "loadwatch_process_cpu_seconds_total",
    "loadwatch_process_context_switches_total",
    "loadwatch_process_major_page_faults_total",
    "loadwatch_process_minor_page_faults_total",
    "loadwatch_process_read_bytes_total",
    "loadwatch_process_write_bytes_total",
]


def names(samples, target):
    return {n for (n, ls), _ in samples.items() if dict(ls).get("target") == target}


class TargetDown(unittest.TestCase):
    def setUp(self):
        self.marker = "lw-down-%s" % uuid.uuid4().hex[:12]
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    def start(self):
        # Some CPU first, so the counters are non-zero and must survive the kill.
        code = "import sys,time\nx=sum(range(3000000))\ntime.sleep(60)"
        p = subprocess.Popen([sys.executable, "-c", code, self.marker])
        self.procs.append(p)
        return p

    def test_gauges_absent_while_down_and_start_time_moves(self):
        p = self.start()
        # "lw-dow[n]-..." matches the marker but not loadwatch's own command line.
        regex = self.marker.replace("lw-down-", "lw-dow[n]-")
        args = ["--sample.interval=200ms", "--target=svc=cmdline:%s" % regex]
        with Loadwatch(args) as lw:
            up = lw.wait_for(lambda s: lw.value("loadwatch_target_up", s, target="svc") == 1 and
                             lw.value("loadwatch_process_cpu_seconds_total", s, target="svc",
                                      mode="user") > 0, what="svc up")
            self.assertLessEqual(set(GAUGES) | set(KEPT), names(up, "svc"))
            first_start = lw.value("loadwatch_process_start_time_seconds", up, target="svc")
            self.assertAlmostEqual(first_start, time.time(), delta=30)
            cpu_before = lw.value("loadwatch_process_cpu_seconds_total", up, target="svc",
                                  mode="user")

            p.kill()
            p.wait()
            down = lw.wait_for(lambda s: lw.value("loadwatch_target_up", s, target="svc") == 0,
                               what="svc down")
            present = names(down, "svc")
            self.assertFalse(set(GAUGES) & present, set(GAUGES) & present)
            self.assertLessEqual(set(KEPT), present)
            self.assertEqual(lw.value("loadwatch_target_processes", down, target="svc"), 0)
            self.assertGreaterEqual(lw.value("loadwatch_process_cpu_seconds_total", down,
                                             target="svc", mode="user"), cpu_before)
            ok, out = promtool_check(lw.metrics_text())
            self.assertTrue(ok, out)

            time.sleep(1.1)  # a start time one second later at least
            self.start()
            back = lw.wait_for(lambda s: lw.value("loadwatch_target_up", s, target="svc") == 1,
                               what="svc back up")
            self.assertLessEqual(set(GAUGES), names(back, "svc"))
            second_start = lw.value("loadwatch_process_start_time_seconds", back, target="svc")
            self.assertGreater(second_start, first_start + 1)
            self.assertEqual(lw.value("loadwatch_target_restarts_total", back, target="svc"), 1)
            self.assertGreaterEqual(lw.value("loadwatch_process_cpu_seconds_total", back,
                                             target="svc", mode="user"), cpu_before)
            ok, out = promtool_check(lw.metrics_text())
            self.assertTrue(ok, out)


if __name__ == "__main__":
    lwtest.main()
