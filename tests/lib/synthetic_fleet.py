"""A synthetic fleet as Prometheus would have scraped it: generator and target hosts, each with
the families a loadwatch exports and the report across hosts reads, over one run of several
phases, written as OpenMetrics for `promtool tsdb create-blocks-from openmetrics`, then served by
a Prometheus on loopback. The ground truth (which host saturated, the merged latency) is known
by construction.

    fleet = Fleet(generators=4, targets=2, phases=4, phase_seconds=30, scrape_seconds=2)
    with fleet.prometheus(workdir) as url:
        ... loadwatch report --prometheus url --run fleet.run_id ...
"""
import json
import math
import os
import subprocess
import time

from lwtest import eventually, free_port, http_get

RUN = "20260101T000000-synthetic"
SATURATED_CORES = 1.97  # the saturated generator's busy CPU, of its 2 cores


def duration_bounds():
    """The upper bounds of loadwatch_generator_request_duration_seconds, as loadwatch writes
    them: 0.1 ms to 235 s, twelve per doubling, three significant digits."""
    return [float("%.3g" % (1e-4 * 2 ** (k / 12.0))) for k in range(255)]


def le_text(v):
    return "+Inf" if math.isinf(v) else repr(v)


class Host:
    def __init__(self, name, role, cores, env="perf"):
        self.name, self.role, self.cores, self.env = name, role, cores, env
        self.instance = "%s:9797" % name
        self.latency = None  # a generator's every request takes this long (seconds)
        self.weight = 1.0  # a generator's share of the per-generator req/s

    def labels(self, **more):
        d = {"job": "loadwatch", "instance": self.instance, "env": self.env}
        d.update(more)
        return d


class Fleet:
    """`generators` + `targets` hosts (and `others` more generators outside env="perf"). The
    generator at index `saturated` has its CPU at SATURATED_CORES of 2 from the second phase on;
    every other host stays below half of its cores."""

    def __init__(self, generators, targets, phases, phase_seconds, scrape_seconds, others=0,
                 saturated=None, end=None, gen_prefix="gen"):
        self.phases, self.phase_seconds, self.scrape = phases, phase_seconds, scrape_seconds
        self.run_id = RUN
        self.saturated = saturated if saturated is not None else generators // 2
        self.hosts = []
        for i in range(generators):
            h = Host("%s-%02d" % (gen_prefix, i + 1), "generator host", 2)
            h.latency = 0.010 * (1 + i % 10)
            self.hosts.append(h)
        # The last generator is slow but sends little: the fleet's p95 is then neither the
        # slowest host's p95 nor the mean of the hosts' p95s.
        self.hosts[generators - 1].weight = 0.1
        for i in range(targets):
            self.hosts.append(Host("sut-%02d" % (i + 1), "target host", 4))
        for i in range(others):
            h = Host("other-%02d" % (i + 1), "generator host", 2, env="staging")
            h.latency = 0.5
            self.hosts.append(h)
        # Recent enough for Prometheus's retention and the report's 24 h lookback; old enough
        # to be in the past once written.
        end = end or (int(time.time()) // 60 * 60 - 1800)
        self.start = end - phases * phase_seconds
        self.end = end
        self.users = [10 * (k + 1) for k in range(phases)]

    @property
    def perf_hosts(self):
        return [h for h in self.hosts if h.env == "perf"]

    @property
    def saturated_host(self):
        return self.hosts[self.saturated]

    def phase_of(self, t):
        k = int((t - self.start) // self.phase_seconds)
        return k if 0 <= k < self.phases else None

    def gen_rps(self, k, h=None):
        # per generator: the fleet's throughput grows with its users
        return 20.0 * (k + 1) * (h.weight if h else 1.0)

    def fleet_rps(self, k):
        return sum(self.gen_rps(k, h) for h in self.perf_hosts if h.role == "generator host")

    def busy_cores(self, h, k):
        if h.role == "generator host":
            if h is self.saturated_host and k >= 1:
                return SATURATED_CORES
            return 0.2 + 0.1 * k
        return 0.3 + 0.2 * k  # a target host: the app's CPU plus a little

    def app_cores(self, k):
        return 0.2 + 0.2 * k

    def true_quantile(self, q):
        """The q-quantile of every request of the env=perf generators in one phase: each
        generator's requests all take its latency, in proportion to its weight."""
        gens = sorted((h.latency, h.weight) for h in self.perf_hosts
                      if h.role == "generator host")
        total, seen = sum(w for _, w in gens), 0.0
        for latency, w in gens:
            seen += w
            if seen >= q * total - 1e-9:
                return latency
        return gens[-1][0]

    def times(self):
        t = self.start - 10 * self.scrape
        while t <= self.end + 10 * self.scrape:
            yield t
            t += self.scrape

    def write_openmetrics(self, path):
        """Writes the fleet; each family's series one after another, as OpenMetrics wants."""
        times = list(self.times())
        bounds = duration_bounds() + [math.inf]
        with open(path, "w") as f:
            def family(name, series):
                f.write("# TYPE %s unknown\n" % name)
                for labels, points in series:
                    text = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
                    for t, v in points:
                        f.write("%s{%s} %r %.3f\n" % (name, text, float(v), t))

            def counter(h, rate_of, **labels):
                """(labels, points) of a counter growing at rate_of(phase) (0 outside the run)."""
                value, points = 0.0, []
                for t in times:
                    k = self.phase_of(t - self.scrape)
                    value += (rate_of(k) if k is not None else 0) * self.scrape
                    points.append((t, value))
                return (h.labels(**labels), points)

            family("loadwatch_last_sample_timestamp_seconds",
                   [(h.labels(), [(t, t - 0.25) for t in times]) for h in self.hosts])
            # Host CPU per CPU and mode.
            cpu = []
            for h in self.hosts:
                for c in range(h.cores):
                    share = lambda k, h=h: (self.busy_cores(h, k) if k is not None else 0.1) / h.cores
                    for mode, part in (("user", 0.7), ("system", 0.3)):
                        cpu.append(counter(h, lambda k, p=part, s=share: p * s(k), cpu=str(c),
                                           mode=mode))
                    cpu.append(counter(h, lambda k, s=share: 1 - s(k), cpu=str(c), mode="idle"))
                    cpu.append(counter(h, lambda k: 0.0, cpu=str(c), mode="softirq"))
                    cpu.append(counter(h, lambda k: 0.0, cpu=str(c), mode="iowait"))
            family("loadwatch_cpu_seconds_total", cpu)
            family("loadwatch_procs_running",
                   [(h.labels(), [(t, 1) for t in times]) for h in self.hosts])
            targets = [h for h in self.hosts if h.role == "target host"]
            gens = [h for h in self.hosts if h.role == "generator host"]
            # The app on every target host: four processes, so no busiest one is claimed.
            family("loadwatch_process_cpu_seconds_total", [
                counter(h, lambda k, p=part: p * (self.app_cores(k) if k is not None else 0.01),
                        target="app", mode=mode)
                for h in targets for mode, part in (("user", 0.8), ("system", 0.2))])
            for name, value in (("loadwatch_target_processes", 4),
                                ("loadwatch_process_resident_memory_bytes", 5e8),
                                ("loadwatch_process_open_fds", 200),
                                ("loadwatch_process_max_fds", 65536)):
                family(name, [(h.labels(target="app"), [(t, value) for t in times])
                              for h in targets])
            family("loadwatch_tcp_connections", [
                (h.labels(state=s), [(t, n) for t in times])
                for h in self.hosts for s, n in (("established", 50), ("time_wait", 100))])
            # The generators: requests, failures, users and the request-duration histogram.
            family("loadwatch_generator_requests_total", [
                counter(h, lambda k, h=h: self.gen_rps(k, h) if k is not None else 0,
                        source="lc")
                for h in gens])
            family("loadwatch_generator_failures_total",
                   [counter(h, lambda k: 0, source="lc") for h in gens])
            family("loadwatch_generator_users", [
                (h.labels(source="lc"),
                 [(t, self.users[self.phase_of(t)] if self.phase_of(t) is not None else 0)
                  for t in times]) for h in gens])
            buckets = []
            for h in gens:
                requests = counter(h, lambda k, h=h: self.gen_rps(k, h) if k is not None
                                   else 0)[1]
                for le in bounds:
                    inside = h.latency <= le
                    buckets.append((h.labels(source="lc", le=le_text(le)),
                                    [(t, n if inside else 0) for t, n in requests]))
            family("loadwatch_generator_request_duration_seconds_bucket", buckets)
            # The run, as the runs collector exports it: open, its current phase, then finished.
            info, start, phase_start, phase_users, end = [], [], [], [], []
            for h in self.hosts:
                open_ = [t for t in times if self.start <= t < self.end]
                after = [t for t in times if t >= self.end]
                by_phase = {}
                for t in open_:
                    by_phase.setdefault(self.phase_of(t), []).append(t)
                for k, ts in sorted(by_phase.items()):
                    info.append((h.labels(run=RUN, name="synthetic", origin="api",
                                          phase="step-%d" % (k + 1)), [(t, 1) for t in ts]))
                    at = self.start + k * self.phase_seconds
                    phase_start.append((h.labels(run=RUN, phase="step-%d" % (k + 1)),
                                        [(t, at) for t in ts]))
                    phase_users.append((h.labels(run=RUN, phase="step-%d" % (k + 1)),
                                        [(t, self.users[k]) for t in ts]))
                start.append((h.labels(run=RUN), [(t, self.start) for t in open_ + after]))
                end.append((h.labels(run=RUN), [(t, self.end) for t in after]))
            family("loadwatch_run_info", info)
            family("loadwatch_run_start_timestamp_seconds", start)
            family("loadwatch_run_phase_start_timestamp_seconds", phase_start)
            family("loadwatch_run_phase_users", phase_users)
            family("loadwatch_run_end_timestamp_seconds", end)
            f.write("# EOF\n")

    def prometheus(self, workdir):
        return _Prometheus(self, workdir)


class _Prometheus:
    """Writes the fleet, backfills it into a fresh data dir and serves it on loopback."""

    def __init__(self, fleet, workdir):
        self.fleet, self.workdir = fleet, workdir
        self.proc = None
        self.timings = {}

    def __enter__(self):
        om = os.path.join(self.workdir, "fleet.om")
        data = os.path.join(self.workdir, "data")
        t0 = time.monotonic()
        self.fleet.write_openmetrics(om)
        self.timings["write_s"] = time.monotonic() - t0
        self.timings["openmetrics_bytes"] = os.path.getsize(om)
        t0 = time.monotonic()
        r = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, data],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError("promtool: %s" % r.stderr[-2000:])
        self.timings["promtool_s"] = time.monotonic() - t0
        os.unlink(om)
        cfg = os.path.join(self.workdir, "prometheus.yml")
        self.query_log = os.path.join(self.workdir, "queries.log")
        with open(cfg, "w") as f:
            f.write("global: {scrape_interval: 1m, query_log_file: %s}\n" % self.query_log)
        port = free_port()
        self.url = "http://127.0.0.1:%d" % port
        self.log = open(os.path.join(self.workdir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + data,
             "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
            stdout=self.log, stderr=self.log)
        q = "/api/v1/query?query=count(loadwatch_run_start_timestamp_seconds)&time=%d" % (
            self.fleet.end + 5)
        eventually(lambda: b'"result":[{' in http_get(self.url + q)[2], 60, 0.3,
                   "Prometheus serves the synthetic fleet")
        return self.url

    def queries_served(self):
        """Prometheus's own count of the query API calls it answered, and their bytes."""
        body = http_get(self.url + "/metrics")[2]
        queries = size = 0.0
        for line in body.decode().splitlines():
            for handler in ('handler="/api/v1/query"', 'handler="/api/v1/query_range"'):
                if handler not in line:
                    continue
                if line.startswith("prometheus_http_requests_total{"):
                    queries += float(line.rsplit(" ", 1)[1])
                elif line.startswith("prometheus_http_response_size_bytes_sum{"):
                    size += float(line.rsplit(" ", 1)[1])
        return queries, size

    def logged_queries(self, skip=0):
        """The queries Prometheus logged (its query_log_file), after the first `skip`: each
        {"query", "eval_s"} with its own evaluation time."""
        out = []
        if os.path.exists(self.query_log):
            with open(self.query_log) as f:
                for line in f.readlines()[skip:]:
                    d = json.loads(line)
                    out.append({"query": d["params"]["query"],
                                "eval_s": d.get("stats", {}).get("timings", {})
                                .get("evalTotalTime", 0.0)})
        return out

    def __exit__(self, *exc):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
