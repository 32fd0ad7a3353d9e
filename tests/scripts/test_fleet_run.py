#!/usr/bin/env python3
"""One run across hosts: `loadwatch run` opens it on the loadwatch of every host with one id and
the same instants, and `loadwatch report --url ... --url ...` judges every host in one report.

Three hosts are network namespaces on a bridge (tests/lib/netns.py): "sut" runs a server that
burns one core per request (capacity_server.py, cpu: one Python process, so its CPU saturates
first) and a loadwatch watching it; "gen" runs Locust, stepped by `run exec --phase-every`,
and a loadwatch with Locust as its source; "mock" runs Mountebank, called by a side client on
gen, and a loadwatch with it as a source. Checked against the peers' own counts: the fleet's
req/s per phase against the requests the server itself logged in that phase's window; the
phases against the instants on every host; the roles; every host judged at one phase. A
Prometheus on gen scrapes all three: `report --prometheus --run ID` finds the three instances
and agrees with the direct report. Also: a start one loadwatch refuses is undone on the
others. Skipped (exit 77) without namespaces.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import locust_log  # noqa: E402
from lwtest import BINARY, eventually, find_mb  # noqa: E402
from netns import SKIP, run_on_hosts  # noqa: E402

APP_PORT = 8080
LW_PORT = 9797
LOCUST_PORT = 8089
STEP = 10  # seconds per phase: a stable half of 5 s holds two of Locust's 2-s updates
USERS = [1, 2, 3]
SERVICE_MS = 25  # CPU per request: one core serves at most 40 req/s

MB_PORT = 2525
IMPOSTER_PORT = 4545
MOCK_CLIENT = """
import sys, time, urllib.request
end = time.time() + float(sys.argv[3])
while time.time() < end:
    try:
        urllib.request.urlopen("http://%s:%s/ok" % (sys.argv[1], sys.argv[2]), timeout=2).read()
    except OSError:
        pass
    time.sleep(0.05)
"""

LOCUSTFILE = locust_log.VISITOR + """
from locust import LoadTestShape


class Steps(LoadTestShape):
    def tick(self):
        i = int(self.get_run_time() // %d)
        return (%r[i], 100) if i < %d else None
""" % (STEP, USERS, len(USERS))


def check(hosts, work, procs, failures):
    sut, gen = hosts.address("sut"), hosts.address("gen")
    mock = hosts.address("mock")
    urls = ["--url=sut=http://%s:%d" % (sut, LW_PORT), "--url=gen=http://%s:%d" % (gen, LW_PORT),
            "--url=mock=http://%s:%d" % (mock, LW_PORT)]
    served = os.path.join(work, "served.log")
    env = dict(os.environ, CAPACITY_SERVER_BIND=sut, CAPACITY_SERVER_LOG=served)
    procs.append(hosts.popen("sut", [sys.executable, os.path.join(HERE, "capacity_server.py"),
                                     str(APP_PORT), "1", str(SERVICE_MS), "cpu"], env=env))
    cfg = os.path.join(work, "gen.yml")
    with open(cfg, "w") as f:
        f.write("sources:\n  - {name: lc, kind: locust, url: 'http://127.0.0.1:%d', "
                "interval: 500ms, timeout: 1s}\n" % LOCUST_PORT)
    common = ["--web.enable-run-api", "--sample.interval=500ms"]
    # mock: Mountebank with one imposter, and a loadwatch with it as a source.
    procs.append(hosts.popen("mock", [find_mb(), "--port", str(MB_PORT), "--host", mock,
                                      "--pidfile", os.path.join(work, "mb.pid"), "--logfile",
                                      os.path.join(work, "mb.log"), "--loglevel", "warn"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    mock_cfg = os.path.join(work, "mock.yml")
    with open(mock_cfg, "w") as f:
        f.write("sources:\n  - {name: mb, kind: mountebank, url: 'http://%s:%d', "
                "interval: 500ms}\n" % (mock, MB_PORT))
    log = open(os.path.join(work, "lw.log"), "w")
    procs.append(hosts.popen("sut", [BINARY, "--web.listen-address=%s:%d" % (sut, LW_PORT),
                                     "--target=srv=port:%d" % APP_PORT, *common],
                             stdout=log, stderr=log))
    procs.append(hosts.popen("gen", [BINARY, "--web.listen-address=%s:%d" % (gen, LW_PORT),
                                     "--config.file=" + cfg, *common], stdout=log, stderr=log))
    procs.append(hosts.popen("mock", [BINARY, "--web.listen-address=%s:%d" % (mock, LW_PORT),
                                      "--config.file=" + mock_cfg, *common],
                             stdout=log, stderr=log))
    prom_cfg = os.path.join(work, "prometheus.yml")
    with open(prom_cfg, "w") as f:
        f.write("global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: loadwatch\n"
                "    static_configs: [{targets: ['%s:%d', '%s:%d', '%s:%d']}]\n"
                % (sut, LW_PORT, gen, LW_PORT, mock, LW_PORT))
    procs.append(hosts.popen("gen", [
        "prometheus", "--config.file=" + prom_cfg, "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
        "--web.listen-address=127.0.0.1:9090", "--log.level=warn"], stdout=log, stderr=log))
    # A third loadwatch whose run API is read-only: a start must fail there and be undone.
    procs.append(hosts.popen("sut", [BINARY, "--web.listen-address=%s:%d" % (sut, LW_PORT + 1)],
                             stdout=log, stderr=log))

    def get(host, path, port=LW_PORT):
        r = hosts.run(host, ["curl", "-sf", "--max-time", "5",
                             "http://%s:%d%s" % (hosts.address(host), port, path)])
        return json.loads(r.stdout) if r.returncode == 0 else None
    def imposter():
        r = hosts.run("mock", ["curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w",
                               "%{http_code}", "-H", "Content-Type: application/json", "-d",
                               json.dumps({"protocol": "http", "port": IMPOSTER_PORT, "stubs": [
                                   {"responses": [{"is": {"statusCode": 200, "body": "ok"}}]}]}),
                               "http://%s:%d/imposters" % (mock, MB_PORT)])
        return r.stdout == "201"
    eventually(imposter, 40, 0.3, "Mountebank on mock takes an imposter")
    for host, port in (("sut", LW_PORT), ("gen", LW_PORT), ("mock", LW_PORT),
                       ("sut", LW_PORT + 1)):
        eventually(lambda: get(host, "/api/v1/runs", port) is not None, 20, 0.2,
                   "loadwatch on %s:%d answers" % (host, port))

    # Fail closed: the read-only loadwatch refuses, the run is stopped again on the others.
    started = time.time()
    r = hosts.run("gen", [BINARY, "run", "start", "--name", "refused", *urls,
                          "--url=ro=http://%s:%d" % (sut, LW_PORT + 1)])
    runs = {h: get(h, "/api/v1/runs")["data"] for h in ("sut", "gen", "mock")}
    if r.returncode != 1 or "ro refused it" not in r.stderr or \
            "stopped again on sut, gen, mock" not in r.stderr:
        failures.append("a refused start: exit %d, %r" % (r.returncode, r.stderr))
    elif any(len(v) != 1 or v[0]["state"] != "finished" for v in runs.values()):
        failures.append("the refused run is not stopped on every host: %r" % runs)
    else:
        print("ok: a start one loadwatch refuses is undone on the others (%.1f s)"
              % (time.time() - started))

    # One run, stepped by run exec on both hosts while Locust on gen steps its users.
    lf = os.path.join(work, "steps.py")
    with open(lf, "w") as f:
        f.write(LOCUSTFILE)
    # A side client on gen calls the mock through the run (not counted by Locust).
    procs.append(hosts.popen("gen", [sys.executable, "-c", MOCK_CLIENT, mock, str(IMPOSTER_PORT),
                                     str(STEP * 3 + 20)]))
    r = hosts.run("gen", [
        BINARY, "run", "exec", "--name", "fleet", *urls, "--phase-every=%ds" % STEP,
        "--users-start=%d" % USERS[0], "--users-step=1", "--", "timeout", str(STEP * 3 + 15),
        "locust", "-f", lf, "--host", "http://%s:%d" % (sut, APP_PORT), "--autostart",
        "--autoquit", "0", "--web-host", "127.0.0.1", "--web-port", str(LOCUST_PORT),
        "--loglevel", "WARNING"], timeout=STEP * 3 + 40)
    if r.returncode != 0:
        raise AssertionError("run exec: %d %s" % (r.returncode, r.stderr[-2000:]))
    newest = {h: get(h, "/api/v1/runs?phases=1")["data"][0] for h in ("sut", "gen", "mock")}
    if len({v["id"] for v in newest.values()}) != 1:
        failures.append("two ids: %r" % {h: v["id"] for h, v in newest.items()})
    run_id = newest["gen"]["id"]
    starts = {h: [v["start"]] + [p["start"] for p in v["phases"]] + [v["end"]]
              for h, v in newest.items()}
    # One machine, one clock: the instants must agree to the skew's bound (a round trip).
    worst = max(abs(a - b) for h in ("sut", "mock") for a, b in zip(starts[h], starts["gen"]))
    if len({len(v) for v in starts.values()}) != 1 or worst > 0.05:
        failures.append("the instants differ by %.3f s: %r" % (worst, starts))
    else:
        print("ok: run %s has the same %d instants on the 3 hosts (within %.0f ms)"
              % (run_id, len(starts["sut"]), worst * 1000))

    r = hosts.run("gen", [BINARY, "report", *urls, "--run", run_id, "--format", "json"])
    if r.returncode != 0:
        raise AssertionError("report: %d %s" % (r.returncode, r.stderr))
    rep = json.loads(r.stdout)
    roles = {h["name"]: h["role"] for h in rep["hosts"]}
    if roles != {"sut": "target host", "gen": "generator host", "mock": "mock host"}:
        failures.append("roles: %r" % roles)
    else:
        print("ok: roles inferred: %r" % roles)
    for h in rep["hosts"]:
        skew = h["clock_skew"]
        if not (abs(skew["seconds"]) <= skew["uncertainty_seconds"] + 0.005):
            failures.append("%s's skew on one clock: %r" % (h["name"], skew))
    # The fleet's req/s against what the server logged in each phase's stable window.
    with open(served) as f:
        times = [float(x) for x in f if x.strip()]
    checked = 0
    for p in rep["fleet"]["phases"]:
        if "rps" not in p or "stable_start" not in p:
            continue
        lo, hi = p["stable_start"], p["end"]
        truth = len([t for t in times if lo <= t <= hi]) / (hi - lo)
        # Within the figure's own bound, and a sample's worth of requests either side.
        slack = 1.0 / (hi - lo)
        if not p["rps_low"] * 0.9 - slack <= truth <= p["rps_high"] * 1.1 + slack:
            failures.append("phase %s: fleet req/s %.1f [%.1f, %.1f], the server served %.1f/s"
                            % (p["name"], p["rps"], p["rps_low"], p["rps_high"], truth))
        checked += 1
    if checked < 2:
        failures.append("fewer than 2 phases with req/s: %r" % rep["fleet"]["phases"])
    else:
        print("ok: the fleet's req/s matches the server's own count in %d phases" % checked)
    # Prometheus: the run both instances exported is one run across their hosts.
    def scraped_end():
        r = hosts.run("gen", ["curl", "-sf", "--max-time", "5", "http://127.0.0.1:9090/api/v1/query",
                              "--data-urlencode", 'query=loadwatch_run_end_timestamp_seconds{run="%s"}'
                              % run_id])
        return r.returncode == 0 and len(json.loads(r.stdout)["data"]["result"]) == 3
    eventually(scraped_end, 20, 0.5, "Prometheus scraped the run's end on every host")
    r = hosts.run("gen", [BINARY, "report", "--prometheus", "http://127.0.0.1:9090", "--run", run_id,
                          "--format", "json"])
    if r.returncode != 0:
        raise AssertionError("report --prometheus: %d %s" % (r.returncode, r.stderr))
    prom = json.loads(r.stdout)
    by_addr = {"%s:%d" % (hosts.address(h), LW_PORT): h for h in ("sut", "gen", "mock")}
    prom_roles = {by_addr.get(h["name"], h["name"]): h["role"] for h in prom["hosts"]}
    if prom_roles != roles:
        failures.append("Prometheus roles %r, direct %r" % (prom_roles, roles))
    # Prometheus scrapes every 1 s: a phase shorter than 2 s (the stub that starts as Locust
    # quits) may fall between two scrapes of a host, and then the fleet leaves it out with a
    # warning. Every longer phase must be there, matched by name.
    long_phases = [p["name"] for p in rep["fleet"]["phases"] if p["end"] - p["start"] >= 2]
    prom_by_name = {p["name"]: p for p in prom["fleet"]["phases"]}
    agreed = 0
    for d in rep["fleet"]["phases"]:
        p = prom_by_name.get(d["name"])
        if p is None:
            continue
        if "rps" not in d or "rps" not in p:
            continue
        # The same samples, scraped at 1 s: within the direct figure's bound, widened by 10 %.
        if not d["rps_low"] * 0.9 <= p["rps"] <= d["rps_high"] * 1.1:
            failures.append("phase %s: Prometheus req/s %.1f, direct %.1f [%.1f, %.1f]"
                            % (d["name"], p["rps"], d["rps"], d["rps_low"], d["rps_high"]))
        agreed += 1
    # Scraped at 1 s on a busy machine, a phase's rate may be too uncertain to give: then it
    # says why. One phase at least must be compared.
    silent = [p["name"] for p in prom["fleet"]["phases"]
              if "rps" not in p and not p.get("rps_unavailable")]
    if any(n not in prom_by_name for n in long_phases) or agreed < 1 or silent:
        failures.append("Prometheus phases %d, direct %d, %d compared; why not: %r; "
                        "warnings %r; phases by host %r" % (
            len(prom["fleet"]["phases"]), len(rep["fleet"]["phases"]), agreed,
            [p.get("rps_unavailable") for p in prom["fleet"]["phases"]], prom.get("warnings"),
            {h["name"]: [(p["name"], p.get("start"), p.get("end")) for p in h["report"]["phases"]]
             for h in prom["hosts"] if "report" in h}))
    else:
        print("ok: report --prometheus finds the 3 instances; req/s agrees in %d phases" % agreed)

    # Every host judged at the same phase; the summary names a host and what saturated there.
    # (Which host saturates is left to a set-up with CPU quotas: here both namespaces share
    # the machine's two cores with whatever else runs.)
    judged = {h["name"]: h["verdict"].get("phase_index") for h in rep["hosts"]}
    if len(set(judged.values())) != 1 or None in judged.values():
        failures.append("hosts judged at different phases: %r" % judged)
    named = [h["name"] for h in rep["hosts"] if rep["summary"].count("%s (%s)"
                                                                       % (h["name"], h["role"]))]
    if len(named) != 1 and "no host shows a limit" not in rep["summary"]:
        failures.append("the verdict names no host: %r" % rep["summary"])
    else:
        print("ok: verdict: %s" % rep["summary"])


def main():
    if not shutil.which("locust") or not find_mb() or not shutil.which("prometheus"):
        print("SKIP: locust, Mountebank or prometheus missing (scripts/install-deps test)")
        return SKIP
    work = tempfile.mkdtemp(prefix="lw-fleet-")
    try:
        return run_on_hosts(["sut", "gen", "mock"], check, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
