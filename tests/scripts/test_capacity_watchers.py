"""Three loadwatch daemons watch one real Locust step run of 15 s steps, the README's: two scrape
Locust's web UI (every 5 s, the default, and every 1 s), one takes the Locust listener's pushes.
Each writes its own report of the same physical run; `compare` with the documented gate must
pass between any two of them, both ways, and all three must find the same knee.

The server (tests/scripts/capacity_server.py) serves K requests at once, SERVICE_MS each: its
throughput flattens at K / SERVICE_MS from K users on, so the run has a knee by construction.
The locustfile logs every request Locust counts and each step as the shape hands it out
(tests/lib/locust_log.py): the pull daemons' phase boundaries are checked against the steps,
and every daemon's per-phase req/s against the requests: within its bound and within 3 % of
the log's count over the window its report states, in every phase. Everything listens on
127.0.0.1; every wait is bounded.
"""
import bisect
import json
import os
import shutil
import subprocess
import sys
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import locust_log  # noqa: E402
import lwtest  # noqa: E402
from lwtest import Loadwatch, eventually, free_port  # noqa: E402
from test_capacity_run import CapacityRunHelpers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LISTENER = os.path.join(HERE, "..", "..", "scripts", "locust", "loadwatch_listener.py")
USERS = [1, 2, 4, 8]  # Kneedle needs a few steps past the knee to tell it from noise
# The README's step: a 7.5 s stable window (the warm-up rule takes the first half) holds one or
# two 5 s scrapes, and the rate reaches back to the phase's change before it when it holds one.
STEP = 15.0
K, SERVICE_MS = 2, 100  # 20 req/s from 2 users on
GATE = ["--max", "p95=+20%", "--min", "rps=-10%"]  # the README's gate

LOCUSTFILE = locust_log.CODE + locust_log.VISITOR + """
from locust import LoadTestShape


class Steps(LoadTestShape):
    users = %(users)r
    last = -1

    def tick(self):
        t = self.get_run_time()
        i = int(t // %(step)r)
        want = self.users[i] if i < len(self.users) else 0 if t < %(end)r else None
        if want != self.last:
            log_step(want)
            self.last = want
        return None if want is None else (want, 100)
"""


class Watchers(CapacityRunHelpers, unittest.TestCase):
    def pull_daemon(self, name, interval, locust_port):
        cfg = os.path.join(self.dir, name + ".yml")
        with open(cfg, "w") as f:
            f.write("sources:\n  - {name: lc, kind: locust, url: 'http://127.0.0.1:%d', "
                    "interval: %s, timeout: 1s}\n" % (locust_port, interval))
        return ["--config.file=" + cfg, "--sample.interval=1s",
                "--storage.path=" + os.path.join(self.dir, name)]

    def test_daemons_of_one_run_pass_the_gate_with_one_knee(self):
        app, _ = self.server(K, SERVICE_MS)
        locust_port = free_port()
        target = "--target=app=port:%d" % app
        daemons = {
            "pull5s": self.pull_daemon("pull5s", "5s", locust_port) + [target],
            "pull1s": self.pull_daemon("pull1s", "1s", locust_port) + [target],
            "listener": ["--collector.locustpush", "--push.run-annotations", target,
                         "--sample.interval=1s",
                         "--storage.path=" + os.path.join(self.dir, "listener")],
        }
        origins = {"pull5s": "locust:lc", "pull1s": "locust:lc", "listener": "locust:push"}
        log = os.path.join(self.dir, "locust_log.txt")
        lf = os.path.join(self.dir, "steps.py")
        end = STEP * len(USERS) + 2
        with open(lf, "w") as f:
            f.write(LOCUSTFILE % {"log": log, "users": USERS, "step": STEP, "end": end})
        with Loadwatch(daemons["pull5s"]) as d5, Loadwatch(daemons["pull1s"]) as d1, \
                Loadwatch(daemons["listener"]) as dl:
            lws = {"pull5s": d5, "pull1s": d1, "listener": dl}
            started = time.time()
            with open(os.path.join(self.dir, "locust.log"), "a") as out:
                p = subprocess.Popen(
                    ["locust", "-f", lf + "," + LISTENER, "--host", "http://127.0.0.1:%d" % app,
                     "--web-host", "127.0.0.1", "--web-port", str(locust_port),
                     "--loadwatch-url", dl.url, "--loadwatch-source", "push",
                     "--loglevel", "WARNING"],
                    stdout=subprocess.DEVNULL, stderr=out, cwd=self.dir)
            self.children.append(p)
            # Started from the web UI once both scrapers have seen Locust idle, as a user
            # would: a scraper whose first answer already showed the test running could only
            # date its start at that answer.
            for lw in (d5, d1):
                lw.wait_for(lambda s, lw=lw: lw.value("loadwatch_generator_running", s,
                                                       source="lc") == 0,
                            timeout=30, what="Locust seen idle")
            form = urllib.parse.urlencode({"user_count": 1, "spawn_rate": 1}).encode()
            with urllib.request.urlopen("http://127.0.0.1:%d/swarm" % locust_port, data=form,
                                        timeout=10) as r:
                self.assertEqual(r.status, 200)

            # Locust stays up once the shape ends, so that the 5 s scraper sees it stop; it is
            # killed (tearDown) once every daemon has its run.
            def ended():
                return any(users is None for _, users in locust_log.read(log)[1])
            eventually(ended, timeout=end + 30, what="the shape's end")

            def finished(name):
                runs = json.loads(lws[name].get("/api/v1/runs?phases=1")[2])["data"]
                done = [r for r in runs if r["origin"] == origins[name]
                        and r["state"] == "finished" and len(r["phases"]) >= len(USERS)]
                return done and done[0]

            reports = {}
            for name, lw in lws.items():
                run = eventually(lambda: finished(name), timeout=20,
                                 what="a finished run in %s" % name)
                reports[name] = (run, self.report(lw, run["id"]))
            print("\nrun took %.1f s" % (time.time() - started), file=sys.stderr)

        requests, steps = locust_log.read(log)
        files = {}
        for name, (run, rep) in reports.items():
            print("%-8s knee %s" % (name, rep["knee"].get("users")), file=sys.stderr)
            for ph in rep["phases"]:
                print("  %-8s start %+.2f rps %s p95 %s %s" % (
                    ph["name"], ph["start"] - steps[0][0],
                    "%.2f [%.2f, %.2f]" % (ph["rps"], ph["rps_low"], ph["rps_high"])
                    if "rps" in ph else ph.get("rps_unavailable"),
                    "%.0f ms" % (ph["p95_seconds"] * 1000) if "p95_seconds" in ph else "-",
                    ph.get("latency_method", "")), file=sys.stderr)
            self.assertEqual([ph["users"] for ph in rep["phases"]][:len(USERS)], USERS, name)
            files[name] = os.path.join(self.dir, name + ".json")
            with open(files[name], "w") as f:
                json.dump(rep, f)

        # The pull daemons' phases begin where Locust stepped, by the shape's own record, within
        # what their answers can tell: a step lies between the last answer showing the old count
        # and the first showing the new one, an answer describing up to 2 s before it left
        # (Locust's cache). Dated to the middle, it is off by at most half that span.
        changes = [at for at, users in steps if users]
        for name, interval in (("pull5s", 5), ("pull1s", 1)):
            run, rep = reports[name]
            starts = [run["start"]] + [ph["start"] for ph in run["phases"][1:len(USERS)]]
            errors = [s - at for s, at in zip(starts, changes)]
            print("%s boundaries off by %s s" % (name, ["%+.2f" % e for e in errors]),
                  file=sys.stderr)
            for e in errors:
                self.assertLessEqual(abs(e), (interval + 2) / 2 + 0.5, (name, errors))

        # Every daemon has a req/s in every phase; it lies within its bound and within 3 % of the
        # rate Locust's own log gives over the window its report states.
        ends = [r[0] for r in requests]
        self.assertGreater(len(ends), 100)
        for name, (_, rep) in reports.items():
            for ph in rep["phases"][:len(USERS)]:
                self.assertIn("rps", ph, (name, ph))
                w0, w1 = ph["rps_window_start"], ph["rps_window_end"]
                self.assertGreaterEqual(w0, ph["start"] - 0.01, (name, ph))
                self.assertLessEqual(w1, ph["end"] + 0.01, (name, ph))
                n = bisect.bisect_right(ends, w1) - bisect.bisect_right(ends, w0)
                truth = n / (w1 - w0)
                one = 1.0 / (w1 - w0)  # whole requests: the count is known within one
                print("%-8s %-8s log %.2f req/s over %.1f s: %+.2f %%" % (
                    name, ph["name"], truth, w1 - w0, (ph["rps"] / truth - 1) * 100),
                    file=sys.stderr)
                self.assertLessEqual(ph["rps_low"] - one, truth, (name, ph))
                self.assertLessEqual(truth, ph["rps_high"] + one, (name, ph))
                self.assertLessEqual(abs(ph["rps"] - truth), 0.03 * truth + one, (name, ph))

        # One run, one knee: the step where the server saturates, whoever watched.
        knees = {name: rep["knee"].get("users") for name, (_, rep) in reports.items()}
        print("knees:", knees, {n: r["knee"].get("reason") for n, (_, r) in reports.items()},
              file=sys.stderr)
        self.assertIn(knees["listener"], (K, 2 * K), knees)
        self.assertEqual(knees["pull1s"], knees["listener"], knees)
        self.assertEqual(knees["pull5s"], knees["listener"], knees)

        # The documented gate passes between any two, both ways: their figures differ only
        # within their bounds, or cannot be judged against each other (a rate too coarse, a
        # latency measured over another window), which the gate says, never a regression.
        names = sorted(files)
        judged = []
        for a in names:
            for b in names:
                if a == b:
                    continue
                cmp = self.cli("compare", files[a], files[b], *GATE, "--format", "json")
                verdicts = json.loads(cmp.stdout) if cmp.stdout.startswith("{") else cmp.stdout
                self.assertEqual(cmp.returncode, 0, "%s vs %s: %s\n%s" % (
                    a, b, json.dumps(verdicts, indent=1)[:4000], cmp.stderr))
                judged += [r["verdict"] for ph in verdicts["phases"] for r in ph["results"]]
                # Every rate is judged: none is too coarse to compare any more.
                for ph in verdicts["phases"]:
                    for r in ph["results"]:
                        if r["metric"] == "rps":
                            self.assertIn(r["verdict"], ("ok", "ok (within noise)"), (a, b, ph))
        print("verdicts:", {v: judged.count(v) for v in set(judged)}, file=sys.stderr)
        # Not a gate that passes by judging nothing: some rules held on their figures.
        self.assertTrue({"ok", "ok (within noise)"} & set(judged), judged)


if __name__ == "__main__":
    if not shutil.which("locust"):
        print("SKIP: locust not installed (scripts/install-deps test: python3-locust)")
        sys.exit(77)
    lwtest.main()
