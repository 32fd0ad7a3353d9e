"""Locustfiles the tests start Locust with: one user that requests / and a LoadTestShape."""


def write_shape(path, tick, wait=0.2):
    """Writes a locustfile to `path`: a Visitor that requests / every `wait` s, and a shape
    whose tick() returns the Python expression `tick` of t, the test's run time in s: a
    (users, spawn rate) pair, or None to end the test."""
    with open(path, "w") as f:
        f.write("from locust import HttpUser, LoadTestShape, constant, task\n\n"
                "class Visitor(HttpUser):\n"
                "    wait_time = constant(%r)\n\n"
                "    @task\n"
                "    def home(self):\n"
                "        self.client.get('/')\n\n"
                "class Shape(LoadTestShape):\n"
                "    def tick(self):\n"
                "        t = self.get_run_time()\n"
                "        return %s\n" % (wait, tick))
