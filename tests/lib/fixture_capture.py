"""What the fixture captures (tests/fixtures/*/capture.py) share: a fresh folder holding the
Locust file, whose every counted request is logged to the capture's requests.txt
(tests/lib/locust_log.py), a Python http.server for Locust to load, a loadwatch taking 500 ms
samples, on fixed loopback ports; every process stopped by its PID and the folder removed at
the end.

    with Capture(OUT, LOCUSTFILE) as run:     # OUT/requests.txt starts empty
        run.serve_target()                    # http://127.0.0.1:TARGET_PORT
        run.start_loadwatch("--collector.locustpush")
        run.start(["locust", "-f", run.locustfile, ...])
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TARGET_PORT = 18080
LOADWATCH_PORT = 19797


class Capture:
    def __init__(self, out_dir, locustfile):
        """`locustfile`: a locust_log template (%(log)r: the request log's path)."""
        self.work = tempfile.mkdtemp(prefix="lw-capture-")
        self.procs = []
        log = os.path.join(out_dir, "requests.txt")
        if os.path.exists(log):
            os.remove(log)
        self.locustfile = self.write("visit.py", locustfile % {"log": log})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.terminate()
            p.wait()
        shutil.rmtree(self.work, ignore_errors=True)

    def write(self, name, text):
        """Writes `text` to the file `name` in the folder; returns its path."""
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def start(self, args):
        """Starts a process (its output dropped) that lives until the end of the capture."""
        self.procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL))

    def serve_target(self):
        """What Locust loads: the folder, served by Python's http.server on TARGET_PORT."""
        self.start([sys.executable, "-m", "http.server", str(TARGET_PORT), "--bind", "127.0.0.1",
                    "--directory", self.work])

    def start_loadwatch(self, *args):
        """build/loadwatch on LOADWATCH_PORT with 500 ms samples and `args`."""
        self.start([os.path.join(ROOT, "build", "loadwatch"),
                    "--web.listen-address=127.0.0.1:%d" % LOADWATCH_PORT,
                    "--sample.interval=500ms"] + list(args))
