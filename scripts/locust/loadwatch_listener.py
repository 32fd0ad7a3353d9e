"""Sends Locust's exact figures to loadwatch every second.

    locust -f steps.py,scripts/locust/loadwatch_listener.py --loadwatch-url http://127.0.0.1:9797

(or LOADWATCH_URL in the environment). loadwatch takes them on POST /api/v1/push/locust when
started with --collector.locustpush; see docs/sources.md, "Locust listener".

Each push carries, with Locust's own clock reading of the moment the counts were complete:
- the cumulative request and failure counts, counted once per request when it completes
  (the `request` event);
- a cumulative latency histogram in fixed buckets: 0.1 ms to 235 s, twelve per doubling
  (1e-4 * 2^(k/12) s rounded to 3 significant digits, k = 0..254, then +Inf), the same list
  loadwatch exports as `le`;
- the user count, and the moment of every completed spawn since the last push (the steps).
A final push goes out when the test stops and when Locust quits.

It never slows or breaks Locust: one greenlet sends, at most one request in flight with a
2 s timeout; what it holds is bounded (counts are cumulative, so a lost push loses nothing
but its moment; at most 64 steps wait for a push that got through); every failure is counted
and logged once, then summed up at exit. It runs on a standalone Locust only: behind a
master, requests complete on the workers and reach the master only as 3-second reports, so a
master has no per-request events to count (it says so and sends nothing; scrape its web UI
instead).
Basic auth: LOADWATCH_USER and LOADWATCH_PASSWORD in the environment.
"""

import base64
import bisect
import json
import logging
import os
import time
import urllib.error
import urllib.request

import gevent
from locust import events
from locust.runners import MasterRunner, WorkerRunner

PATH = "/api/v1/push/locust"
INTERVAL = 1.0
TIMEOUT = 2.0
MAX_STEPS = 64
# Upper bounds, seconds; index len(BOUNDS) is the +Inf bucket.
BOUNDS = [float(f"{1e-4 * 2 ** (k / 12):.3g}") for k in range(255)]

log = logging.getLogger("loadwatch_listener")


class Figures:
    """What the hooks count. gevent runs one greenlet at a time and nothing here yields, so a
    snapshot is never taken halfway through counting a request."""

    def __init__(self):
        self.reset()
        self.users = 0
        self.steps = []  # (unix seconds, users) not yet delivered

    def reset(self):
        self.requests = 0
        self.failures = 0
        self.counts = [0] * (len(BOUNDS) + 1)
        self.sum = 0.0

    def request(self, response_time, failed):
        seconds = max(0.0, float(response_time or 0)) / 1000.0
        self.requests += 1
        if failed:
            self.failures += 1
        self.counts[bisect.bisect_left(BOUNDS, seconds)] += 1
        self.sum += seconds

    def step(self, users):
        self.users = int(users)
        self.steps.append((time.time(), self.users))
        del self.steps[:-MAX_STEPS]  # the newest matter most: they open the phases

    def snapshot(self, source):
        return {
            "source": source,
            "time": time.time(),
            "requests": self.requests,
            "failures": self.failures,
            "users": self.users,
            "steps": [list(s) for s in self.steps],
            "duration": {"counts": list(self.counts), "sum": self.sum},
        }


class Sender:
    def __init__(self, url, source):
        self.url = url.rstrip("/") + PATH
        self.source = source
        self.figures = Figures()
        self.sent = 0
        self.failed = 0
        self.greenlet = None
        self.headers = {"Content-Type": "application/json"}
        user, password = os.environ.get("LOADWATCH_USER"), os.environ.get("LOADWATCH_PASSWORD")
        if user:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            self.headers["Authorization"] = "Basic " + token

    def push(self):
        snap = self.figures.snapshot(self.source)
        delivered = len(snap["steps"])
        body = json.dumps(snap, separators=(",", ":")).encode()
        try:
            req = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
            with urllib.request.urlopen(req, timeout=TIMEOUT) as answer:
                answer.read()
            self.sent += 1
            del self.figures.steps[:delivered]
        except Exception as e:  # never let loadwatch's trouble reach Locust
            self.failed += 1
            if self.failed == 1:
                detail = e.read().decode(errors="replace") if isinstance(e, urllib.error.HTTPError) else ""
                log.warning("loadwatch push to %s failed (%s) %s; further failures are only counted",
                            self.url, e, detail.strip())

    def loop(self):
        due = time.monotonic()
        while True:
            due += INTERVAL
            gevent.sleep(max(0.0, due - time.monotonic()))
            self.push()
            due = max(due, time.monotonic() - INTERVAL)  # after a slow push, do not burst

    def start(self):
        if self.greenlet is None:
            self.greenlet = gevent.spawn(self.loop)

    def stop(self):
        if self.greenlet is not None:
            self.greenlet.kill(block=False)
            self.greenlet = None
        self.push()


sender = None


@events.init_command_line_parser.add_listener
def _options(parser):
    parser.add_argument("--loadwatch-url", type=str, env_var="LOADWATCH_URL", default="",
                        help="loadwatch's base URL: send it exact counts every second")
    parser.add_argument("--loadwatch-source", type=str, env_var="LOADWATCH_SOURCE",
                        default="locust", help="Source name the figures get in loadwatch")


@events.init.add_listener
def _init(environment, **_):
    global sender
    options = environment.parsed_options
    url = getattr(options, "loadwatch_url", "") if options else ""
    if not url or isinstance(environment.runner, WorkerRunner):
        return
    if isinstance(environment.runner, MasterRunner):
        log.warning("loadwatch listener: a master sees no request events (its workers send 3 s "
                    "reports); nothing is sent. Use loadwatch's locust source on the web UI.")
        return
    # Given several -f files, Locust 2.x takes the LoadTestShape from the last file only: with
    # the listener last, a shape in the first file would be lost. One shape among the files is
    # the one meant.
    shapes = list((getattr(environment, "available_shape_classes", None) or {}).values())
    if environment.shape_class is None and len(shapes) == 1:
        environment.shape_class = shapes[0]
        environment.shape_class.runner = environment.runner
    sender = Sender(url, getattr(options, "loadwatch_source", "locust"))
    figures = sender.figures

    @environment.events.request.add_listener
    def _request(response_time=0, exception=None, **_):
        figures.request(response_time, exception is not None)

    @environment.events.test_start.add_listener
    def _test_start(**_):
        figures.reset()  # Locust starts its own stats afresh with each test
        sender.start()

    @environment.events.spawning_complete.add_listener
    def _spawned(user_count, **_):
        figures.step(user_count)

    @environment.events.test_stop.add_listener
    def _test_stop(**_):
        figures.step(0)
        sender.stop()

    @environment.events.quitting.add_listener
    def _quitting(**_):
        sender.stop()
        if sender.failed:
            log.warning("loadwatch: %d of %d pushes failed", sender.failed,
                        sender.sent + sender.failed)
