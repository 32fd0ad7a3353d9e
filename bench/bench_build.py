"""Configures BUILD with -DLOADWATCH_BENCH=ON and builds the targets a bench driver runs.

The benchmarks are not part of the default build; the drivers (run_core.py, net_bench.py) call
build_targets() first, so `python3 bench/<driver>.py` works on a fresh or a test-only build dir.
Other cache settings of an existing BUILD (build type, compiler launcher) are kept.
"""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_targets(build, targets):
    subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DLOADWATCH_BENCH=ON"], check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    cmd = ["cmake", "--build", build, "-j%d" % (os.cpu_count() or 1)]
    for t in targets:
        cmd += ["--target", t]
    subprocess.run(cmd, check=True, timeout=3600)
