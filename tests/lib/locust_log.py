"""Locust's own ground truth for the tests: locustfile code that logs every request Locust
counts and every step its shape hands out, and the reader of that log. A test asserts
loadwatch's figures against this log, never against loadwatch's own output.

    f.write(locust_log.CODE % {"log": path} + my_user_and_shape)  # the shape calls log_step()
    requests, steps = locust_log.read(path)
"""
import math

# Locustfile code (a %-template: %(log)r is the log's path). Each request is logged from
# Locust's request event, the one its statistics and loadwatch's listener count on, in the
# same greenlet: a request logged before a push's timestamp is in that push.
CODE = """
import time as _lw_time
from locust import events as _lw_events

_LW_LOG = open(%(log)r, "a", buffering=1)


@_lw_events.request.add_listener
def _lw_log_request(response_time=0, exception=None, **_):
    _LW_LOG.write("req %%.6f %%.6f %%d\\n" %% (_lw_time.time(), response_time, exception is None))


def log_step(users):
    \"\"\"Logs a step (a user count, or None at the shape's end) as the shape hands it out.\"\"\"
    _LW_LOG.write("step %%.6f %%s\\n" %% (_lw_time.time(), users))
"""

# A user that requests / back to back (for a shape to step through user counts).
VISITOR = """
from locust import HttpUser, constant, task


class Visitor(HttpUser):
    wait_time = constant(0)

    @task
    def home(self):
        self.client.get("/")
"""


def read(path):
    """([(end time, response time in s, ok)] sorted by end time, [(time, users or None)])."""
    requests, steps = [], []
    with open(path) as f:
        for line in f:
            kind, at, rest = line.split(" ", 2)
            if kind == "req":
                ms, ok = rest.split()
                requests.append((float(at), float(ms) / 1000.0, ok == "1"))
            else:
                steps.append((float(at), None if rest.strip() == "None" else int(rest)))
    return sorted(requests), steps


def nearest_rank(values, q):
    """The q-quantile of values by nearest rank."""
    s = sorted(values)
    return s[max(0, math.ceil(q * len(s)) - 1)]
