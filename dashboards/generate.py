#!/usr/bin/env python3
"""Generates the loadwatch mixin: the Grafana dashboards (grafana/*.json) and the Prometheus
rules (rules/loadwatch.{rules,alerts}.yml from config.yml, rules/<profile>/ for each
profiles/<profile>.yml merged over it).

    python3 dashboards/generate.py           # (re)write grafana/*.json and rules/
    python3 dashboards/generate.py --check   # exit 1 if a committed file differs
    python3 dashboards/generate.py --profile my-soak.yml --out DIR   # your own profile's rules

The JSON and YAML files are committed; edit this file, config.yml, profiles/ or rulegen.py,
regenerate, commit both (tests/scripts/test_mixin_lint.sh runs --check). Panel ids, uids and the
layout are derived from the order below, so the output is stable from run to run.

Queries read the recording rules of rules/loadwatch.rules.yml where a rate or trend is needed:
load that file into Prometheus together with the alerts.
"""

import argparse
import json
import pathlib
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import mixin_config  # noqa: E402
import rulegen  # noqa: E402

OUT = HERE / "grafana"
RULES = HERE / "rules"

DS = {"type": "prometheus", "uid": "${datasource}"}
# Selectors: every query is scoped by the dashboard's variables. HOST for host-wide metrics,
# TARGET for metrics of a target (process group).
HOST = 'job=~"$job", instance=~"$instance"'
TARGET = HOST + ', target=~"$target"'
# The hosts that took part in the chosen runs: their loadwatch exports the run's start while it
# is open and after it finished (its last finished run), by instance.
IN_RUN = f'and on (job, instance) loadwatch_run_start_timestamp_seconds{{{HOST}, run=~"$run"}}'


def q(expr, legend, **extra):
    """One query of a panel; refIds are assigned by the panel."""
    d = {"expr": expr, "legendFormat": legend, "range": True}
    d.update(extra)
    return d


def override(regex, **props):
    """Field override for the series whose display name matches regex."""
    properties = []
    for key, value in props.items():
        if key == "color":
            properties.append({"id": "color", "value": {"mode": "fixed", "fixedColor": value}})
        elif key == "dashed":
            properties.append({"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}})
        elif key == "width":
            properties.append({"id": "custom.lineWidth", "value": value})
        elif key == "fill":
            properties.append({"id": "custom.fillOpacity", "value": value})
        else:
            raise ValueError(key)
    return {"matcher": {"id": "byRegexp", "options": regex}, "properties": properties}


def thresholds(*steps):
    """Threshold steps: thresholds("green", (0.8, "red")) -> base green, red from 0.8."""
    out = [{"color": steps[0], "value": None}]
    out += [{"color": c, "value": v} for v, c in steps[1:]]
    return {"mode": "absolute", "steps": out}


def timeseries(title, description, queries, unit="short", w=12, h=8, overrides=(),
               threshold_line=None, axis_label="", bars=False, minimum=None):
    custom = {
        "drawStyle": "bars" if bars else "line",
        "lineWidth": 1,
        "fillOpacity": 10,
        "showPoints": "never",
        "spanNulls": False,
        "axisLabel": axis_label,
        "stacking": {"mode": "none", "group": "A"},
        "thresholdsStyle": {"mode": "line" if threshold_line is not None else "off"},
    }
    defaults = {"unit": unit, "color": {"mode": "palette-classic"}, "custom": custom,
                "thresholds": thresholds("green", (threshold_line, "red"))
                if threshold_line is not None else thresholds("green")}
    if minimum is not None:
        defaults["min"] = minimum
    return {
        "type": "timeseries", "title": title, "description": description, "w": w, "h": h,
        "queries": queries,
        "fieldConfig": {"defaults": defaults, "overrides": list(overrides)},
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom",
                       "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    }


def stat(title, description, queries, unit, steps, no_value, w=8, h=8):
    return {
        "type": "stat", "title": title, "description": description, "w": w, "h": h,
        "queries": queries,
        "fieldConfig": {"defaults": {"unit": unit, "noValue": no_value,
                                     "color": {"mode": "thresholds"},
                                     "thresholds": thresholds(*steps)},
                        "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "value", "graphMode": "area", "textMode": "value_and_name",
                    "orientation": "auto", "justifyMode": "auto"},
    }


def bargauge(title, description, queries, unit, w=12, h=8):
    return {
        "type": "bargauge", "title": title, "description": description, "w": w, "h": h,
        "queries": queries,
        "fieldConfig": {"defaults": {"unit": unit, "min": 0, "color": {"mode": "palette-classic"},
                                     "thresholds": thresholds("green")},
                        "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "orientation": "horizontal", "displayMode": "gradient",
                    "showUnfilled": True},
    }


def row(title, *panels):
    return (title, panels)


# ---- shared panels ---------------------------------------------------------------------------

def rss_panel():
    return timeseries(
        "Resident memory and its peak",
        "Sum of RSS of the target's processes (solid) and the highest sampled sum since the "
        "target last (re)started (dashed). A line that keeps rising under constant load is a "
        "leak; a peak far above the current value is a burst the next run may not survive.",
        [q(f"loadwatch_process_resident_memory_bytes{{{TARGET}}}", "{{target}} RSS ({{instance}})"),
         q(f"loadwatch_process_resident_memory_peak_bytes{{{TARGET}}}",
           "{{target}} peak ({{instance}})")],
        unit="bytes", minimum=0, overrides=[override("/ peak /", dashed=True)])


def fds_panel():
    return timeseries(
        "Open fds against the limit",
        "Open file descriptors of the target (sum over its processes) and the soft "
        "RLIMIT_NOFILE of the member closest to its limit (dashed). At the limit accept() and "
        "connect() fail with EMFILE. For a target of several processes the per-process usage "
        "ratio (LoadwatchFdExhaustion, Soak dashboard) is the exact measure.",
        [q(f"loadwatch_process_open_fds{{{TARGET}}}", "{{target}} open ({{instance}})"),
         q(f"loadwatch_process_max_fds{{{TARGET}}}", "{{target}} limit ({{instance}})")],
        minimum=0, overrides=[override("/ limit /", dashed=True)])


def ephemeral_panel(w=12):
    return timeseries(
        "Ephemeral port usage",
        "Highest share of net.ipv4.ip_local_port_range used by local sockets towards one "
        "remote address and port. Near 100% new outbound connections fail with EADDRNOTAVAIL: "
        "a generator or proxy without keep-alive runs into this first.",
        [q(f"loadwatch_tcp_ephemeral_port_usage_ratio{{{HOST}}}", "{{instance}}")],
        unit="percentunit", threshold_line=0.8, minimum=0, w=w)


def run_annotations():
    """The runs and phases loadwatch knows (the run API, or inferred from a generator) as
    regions: loadwatch_run_info is 1 for the open run and its current phase, so each series
    spans one run or one phase. Grafana puts only labels into an annotation's text:
    count_values turns the phase's users into a label ("not given" when it declared none)."""
    info = f"loadwatch_run_info{{{HOST}}}"
    phase_info = f'loadwatch_run_info{{{HOST}, phase!=""}}'
    users = (f'count_values by (job, instance, run, phase) ("users", '
             f'loadwatch_run_phase_users{{{HOST}}}) or on (job, instance, run, phase) '
             f'label_replace(max by (job, instance, run, phase) ({phase_info}), '
             f'"users", "not given", "users", "")')
    return [
        {"name": "Runs", "datasource": DS, "enable": True, "iconColor": "blue",
         "expr": f"max by (job, instance, run, name) ({info})",
         "titleFormat": "run {{name}}",
         "textFormat": "Run {{name}} ({{run}}) on {{instance}} (loadwatch_run_info).",
         "tagKeys": "instance,run", "useValueForTime": False},
        {"name": "Run phases", "datasource": DS, "enable": True, "iconColor": "purple",
         "expr": f"max by (job, instance, run, name, phase) ({phase_info}) "
                 f"* on (job, instance, run, phase) group_left (users) ({users})",
         "titleFormat": "{{phase}}",
         "textFormat": "Run {{name}} ({{run}}) on {{instance}}: phase {{phase}}, users: "
                       "{{users}} (loadwatch_run_info, loadwatch_run_phase_users).",
         "tagKeys": "instance,run,phase", "useValueForTime": False},
    ]


def annotations(runs=False):
    """Every dashboard's annotations; with runs, also the runs and their phases."""
    return (run_annotations() if runs else []) + [
        {"name": "Target restarts", "datasource": DS, "enable": True, "iconColor": "orange",
         "expr": f"(increase(loadwatch_target_restarts_total{{{TARGET}}}[1m]) > 0) * 0 + 1",
         "titleFormat": "{{target}} restarted",
         "textFormat": "Target {{target}} on {{instance}} came back or its processes were "
                       "replaced (loadwatch_target_restarts_total).",
         "tagKeys": "instance,target", "useValueForTime": False},
        {"name": "Target down", "datasource": DS, "enable": True, "iconColor": "red",
         "expr": f"(loadwatch_target_up{{{TARGET}}} == 0) + 1",
         "titleFormat": "{{target}} down",
         "textFormat": "No process matches target {{target}} on {{instance}} "
                       "(loadwatch_target_up == 0).",
         "tagKeys": "instance,target", "useValueForTime": False},
    ]


# ---- dashboards ------------------------------------------------------------------------------

def test_run():
    return {
        "uid": "loadwatch-test-run",
        "runs": True,
        "title": "loadwatch / Test run",
        "description": "Where is the bottleneck: the generator's numbers beside the target's and "
                       "the host's, on one screen.",
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "10s",
        "rows": [
            row("Load generator",
                timeseries(
                    "Generator requests per second",
                    "Requests per second sent by each load generator (Locust, JMeter, ...): the "
                    "rate of its request counter (solid) and the figure it reports itself "
                    "(dashed). Flat while users rise: the knee of a step-load run.",
                    [q(f"instance_source:loadwatch_generator_requests:rate1m{{{HOST}}}",
                       "{{source}} ({{instance}})"),
                     q(f"loadwatch_generator_requests_per_second{{{HOST}}}",
                       "{{source}} reported ({{instance}})")],
                    unit="reqps", minimum=0, w=6,
                    overrides=[override("/ reported /", dashed=True)]),
                timeseries(
                    "Generator users",
                    "Active (virtual) users as the generator reports them: the load step.",
                    [q(f"loadwatch_generator_users{{{HOST}}}", "{{source}} ({{instance}})")],
                    minimum=0, w=6),
                timeseries(
                    "Generator failure ratio",
                    "Failed requests / all requests over 1 minute, per generator. The red line "
                    "is the LoadwatchGeneratorFailureRatioHigh default (1%).",
                    [q(f"instance_source:loadwatch_generator_failures_per_requests:ratio_rate1m"
                       f"{{{HOST}}}", "{{source}} ({{instance}})")],
                    unit="percentunit", threshold_line=0.01, minimum=0, w=6),
                timeseries(
                    "Generator latency quantiles",
                    "Response-time quantiles as the generator reports them (whole test). "
                    "Growing faster than the users: the system is past its knee.",
                    [q(f"loadwatch_generator_latency_seconds{{{HOST}}}",
                       "{{source}} q{{quantile}} ({{instance}})")],
                    unit="s", minimum=0, w=6)),
            row("Target and host CPU",
                timeseries(
                    "Target CPU: user vs system",
                    "CPU seconds per second (cores) used by each target's processes. High "
                    "system time: syscalls, small writes, lock contention in the kernel.",
                    [q(f"instance_target_mode:loadwatch_process_cpu_seconds:rate1m{{{TARGET}}}",
                       "{{target}} {{mode}} ({{instance}})")],
                    axis_label="cores", minimum=0,
                    overrides=[override("/ system /", dashed=True)]),
                timeseries(
                    "Host CPU by mode",
                    "Share of the host's CPU time by mode (idle omitted). softirq (red) is "
                    "mostly network packet processing and system (orange) the kernel: when they "
                    "grow while user stays flat, the network stack is the bottleneck.",
                    [q(f'instance_mode:loadwatch_cpu_seconds:ratio_rate1m{{{HOST}, mode!="idle"}}',
                       "{{mode}} ({{instance}})")],
                    unit="percentunit", minimum=0,
                    overrides=[override("/^softirq /", color="red", width=3),
                               override("/^system /", color="orange", width=3)])),
            row("Target memory and file descriptors", rss_panel(), fds_panel()),
            row("Host network",
                timeseries(
                    "TIME_WAIT sockets",
                    "TIME_WAIT sockets of the host (/proc/net/sockstat) and "
                    "net.ipv4.tcp_max_tw_buckets (dashed): beyond it the kernel destroys them "
                    "early. Many TIME_WAIT: short-lived connections, keep-alive off.",
                    [q(f"loadwatch_sockstat_tcp_time_wait{{{HOST}}}", "TIME_WAIT ({{instance}})"),
                     q(f'loadwatch_sysctl{{{HOST}, name="net.ipv4.tcp_max_tw_buckets"}}',
                       "tcp_max_tw_buckets ({{instance}})")],
                    minimum=0, w=6, overrides=[override("/^tcp_max_tw_buckets /", dashed=True)]),
                ephemeral_panel(w=6),
                timeseries(
                    "Listen overflows and drops per second",
                    "Incoming connections dropped because an accept queue was full "
                    "(ListenOverflows) and all SYN/accept drops (ListenDrops). Non-zero: raise "
                    "net.core.somaxconn and the listen backlog, or accept faster. The panel "
                    "beside it names the listeners.",
                    [q(f"instance:loadwatch_tcp_listen_overflows:rate1m{{{HOST}}}",
                       "overflows ({{instance}})"),
                     q(f"instance:loadwatch_tcp_listen_drops:rate1m{{{HOST}}}",
                       "drops ({{instance}})")],
                    minimum=0, w=6),
                timeseries(
                    "Fullest listeners (host-wide)",
                    "Accept queue length over the backlog limit of the host's fullest "
                    "listeners, any port, watched or not, with the command of the process that "
                    "owns it (loadwatch exports the 5 fullest non-empty queues). At 100% new "
                    "connections overflow; a bar appears only while a queue holds connections "
                    "nobody accepted yet.",
                    [q(f"loadwatch_tcp_listen_top_queue_length{{{HOST}}}"
                       f" / loadwatch_tcp_listen_top_queue_max{{{HOST}}}",
                       ":{{port}} {{owner}} ({{instance}})")],
                    unit="percentunit", threshold_line=1, minimum=0, bars=True, w=6)),
            row("Mock server",
                timeseries(
                    "Mock requests per imposter",
                    "Requests per second each mock imposter (Mountebank) received, and those no "
                    "stub matched (dashed): unmatched requests are answered with a default "
                    "response and usually mean a wrong test script or mock setup.",
                    [q(f"instance_source_imposter:loadwatch_mock_requests:rate1m{{{HOST}}}",
                       "{{imposter}} ({{source}} on {{instance}})"),
                     q(f"instance_source_imposter:loadwatch_mock_unmatched_requests:rate1m"
                       f"{{{HOST}}}", "{{imposter}} unmatched ({{source}} on {{instance}})")],
                    unit="reqps", minimum=0, w=24,
                    overrides=[override("/ unmatched /", dashed=True)])),
        ],
    }


def soak():
    return {
        "uid": "loadwatch-soak",
        "runs": True,
        "title": "loadwatch / Soak",
        "description": "Long-range trends of a soak run: growth rates and the predicted time "
                       "until memory, fds or ephemeral ports run out.",
        "time": {"from": "now-12h", "to": "now"},
        "refresh": "1m",
        "rows": [
            row("Memory",
                dict(rss_panel(), w=8),
                timeseries(
                    "RSS growth per hour",
                    "Least-squares slope of RSS over the last 30 minutes, per hour. Steadily "
                    "above zero for hours under constant load: a leak. Empty until the "
                    "target's current processes have run for the whole 30 minutes (a restart "
                    "starts over), so a restart never reads as growth or shrinkage.",
                    [q(f"instance_target:loadwatch_process_resident_memory_bytes:deriv30m"
                       f"{{{TARGET}}} * 3600", "{{target}} ({{instance}})")],
                    unit="bytes", w=8),
                stat(
                    "Time until available memory runs out",
                    "Available memory of the host divided by how fast it shrank over the last "
                    "30 minutes. Empty while it does not shrink.",
                    [q(f"loadwatch_memory_available_bytes{{{HOST}}}"
                       f" / -(instance:loadwatch_memory_available_bytes:deriv30m{{{HOST}}} < 0)",
                       "{{instance}}")],
                    "s", ("red", (3600, "orange"), (4 * 3600, "green")), "not shrinking")),
            row("File descriptors",
                dict(fds_panel(), w=8),
                timeseries(
                    "Open fd growth per hour",
                    "Least-squares slope of the open fds over the last 30 minutes, per hour. "
                    "Growth that does not follow the connection count: fds not closed. Empty "
                    "until the target's current processes have run for 30 minutes.",
                    [q(f"instance_target:loadwatch_process_open_fds:deriv30m{{{TARGET}}} * 3600",
                       "{{target}} ({{instance}})")],
                    w=8),
                stat(
                    "Time until the fd limit",
                    "Remaining fd headroom (1 - usage ratio of the process closest to its "
                    "limit) divided by how fast the ratio grew over the last 30 minutes. Empty "
                    "while it does not grow, and until the target's current processes have "
                    "run for 30 minutes.",
                    [q(f"(1 - loadwatch_process_fd_usage_ratio{{{TARGET}}})"
                       f" / (instance_target:loadwatch_process_fd_usage_ratio:deriv30m{{{TARGET}}}"
                       f" > 0)", "{{target}} ({{instance}})")],
                    "s", ("red", (3600, "orange"), (4 * 3600, "green")), "not growing")),
            row("Ephemeral ports",
                ephemeral_panel(w=16),
                stat(
                    "Time until ephemeral ports run out",
                    "Remaining share of the local port range divided by how fast its usage "
                    "grew over the last 30 minutes. Empty while it does not grow.",
                    [q(f"(1 - loadwatch_tcp_ephemeral_port_usage_ratio{{{HOST}}})"
                       f" / (instance:loadwatch_tcp_ephemeral_port_usage_ratio:deriv30m{{{HOST}}}"
                       f" > 0)", "{{instance}}")],
                    "s", ("red", (3600, "orange"), (4 * 3600, "green")), "not growing")),
            row("Restarts",
                timeseries(
                    "Target restarts per hour",
                    "How often each target came back after being down or had all its "
                    "processes replaced, per hour. Any restart in a soak run invalidates the "
                    "trends around it: the annotations mark when.",
                    [q(f"increase(loadwatch_target_restarts_total{{{TARGET}}}[1h])",
                       "{{target}} ({{instance}})")],
                    minimum=0, bars=True, w=24)),
        ],
    }


def fleet():
    return {
        "uid": "loadwatch-fleet",
        "runs": True,
        "run_variable": True,
        "title": "loadwatch / Fleet",
        "description": "Every host of a run side by side, one line per instance: an uneven "
                       "load balancer or one hot host shows at a glance.",
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "rows": [
            row("Hosts of the run",
                timeseries(
                    "Phase users per host of the run",
                    "Users of the current phase on each host that took part in the chosen run "
                    "(the Run variable). One run opened on every host by `loadwatch run --url "
                    "A --url B` steps on all of them at the same instants: a host whose steps "
                    "lag the others has its clock off, or missed the phase.",
                    [q(f'max by (job, instance) (loadwatch_run_phase_users{{{HOST}, '
                       f'run=~"$run"}})', "{{instance}}")],
                    minimum=0, w=6),
                timeseries(
                    "Host CPU busy, hosts of the run",
                    "Busy share of each host's CPU, only the hosts that took part in the run, "
                    "side by side with the run and phase annotations: the first to reach 100% "
                    "(a generator host too) is what saturated first.",
                    [q(f"instance:loadwatch_cpu_seconds_busy:ratio_rate1m{{{HOST}}} {IN_RUN}",
                       "{{instance}}")],
                    unit="percentunit", minimum=0, threshold_line=0.9, w=6),
                timeseries(
                    "Generator requests per second, hosts of the run",
                    "Requests per second of each generator host in the run (all its sources): "
                    "their sum is the fleet's throughput; one host flat while the others rise "
                    "is a generator at its limit.",
                    [q(f"sum by (job, instance) (instance_source:loadwatch_generator_requests:"
                       f"rate1m{{{HOST}}}) {IN_RUN}", "{{instance}}")],
                    unit="reqps", minimum=0, w=6),
                timeseries(
                    "Target CPU, hosts of the run",
                    "CPU (cores, user + system) of each target on each host of the run: "
                    "replicas far apart are an uneven load balancer.",
                    [q(f"instance_target:loadwatch_process_cpu_seconds:rate1m{{{TARGET}}} "
                       f"{IN_RUN}", "{{target}} on {{instance}}")],
                    axis_label="cores", minimum=0, w=6)),
            row("Hosts",
                timeseries(
                    "Host CPU busy per instance",
                    "Busy share of each host's CPU (user, nice, system, irq, softirq). One "
                    "instance far above its peers: it gets more than its share of the load.",
                    [q(f"instance:loadwatch_cpu_seconds_busy:ratio_rate1m{{{HOST}}}",
                       "{{instance}}")],
                    unit="percentunit", minimum=0),
                timeseries(
                    "TIME_WAIT per instance",
                    "TIME_WAIT sockets of each host.",
                    [q(f"loadwatch_sockstat_tcp_time_wait{{{HOST}}}", "{{instance}}")],
                    minimum=0)),
            row("Targets",
                timeseries(
                    "Target RSS per instance",
                    "RSS of each target on each host: replicas of one service should stay "
                    "close to each other.",
                    [q(f"loadwatch_process_resident_memory_bytes{{{TARGET}}}",
                       "{{target}} on {{instance}}")],
                    unit="bytes", minimum=0),
                timeseries(
                    "Target CPU per instance",
                    "CPU seconds per second (cores, user + system) of each target on each host.",
                    [q(f"instance_target:loadwatch_process_cpu_seconds:rate1m{{{TARGET}}}",
                       "{{target}} on {{instance}}")],
                    axis_label="cores", minimum=0)),
            row("Requests per instance",
                timeseries(
                    "Mock requests per instance",
                    "Requests per second each mock host received, all imposters together.",
                    [q(f"sum by (job, instance) (instance_source_imposter:"
                       f"loadwatch_mock_requests:rate1m{{{HOST}}})", "{{instance}}")],
                    unit="reqps", minimum=0, w=8),
                timeseries(
                    "Inbound connections per second per instance",
                    "New TCP connections each host accepted per second (passive opens): how a "
                    "load balancer spreads new connections over the SUT replicas.",
                    [q(f"instance:loadwatch_tcp_passive_opens:rate1m{{{HOST}}}", "{{instance}}")],
                    minimum=0, w=8),
                bargauge(
                    "Established connections on watched ports",
                    "Established connections on the listening ports loadwatch watches, per "
                    "instance and port, now: with keep-alive, requests follow connections, and "
                    "one bar far longer than the others is an uneven balancer.",
                    [q(f'sum by (job, instance, port) (loadwatch_tcp_port_connections{{{HOST},'
                       f' side="local", state="established"}})', "{{instance}} :{{port}}",
                       instant=True, range=False)],
                    "short", w=8)),
        ],
    }


def variables(run=False):
    def query_var(name, label, query, all_value=".+"):
        return {
            "name": name, "label": label, "type": "query", "datasource": DS,
            "query": query, "definition": query, "refresh": 2, "sort": 1,
            "multi": True, "includeAll": True, "allValue": all_value,
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
            "hide": 0, "regex": "", "options": [],
        }
    return [
        {"name": "datasource", "label": "Data source", "type": "datasource",
         "query": "prometheus", "refresh": 1, "hide": 0, "regex": "", "current": {},
         "options": []},
        query_var("job", "Job", "label_values(loadwatch_build_info, job)"),
        query_var("instance", "Instance",
                  'label_values(loadwatch_build_info{job=~"$job"}, instance)'),
        query_var("target", "Target",
                  'label_values(loadwatch_target_up{job=~"$job", instance=~"$instance"}, target)'),
    ] + ([query_var("run", "Run",
                    'label_values(loadwatch_run_start_timestamp_seconds{job=~"$job", '
                    'instance=~"$instance"}, run)')] if run else [])


def build(spec):
    """Lays rows out top to bottom, panels left to right; numbers panels and queries."""
    panels, next_id, y = [], 1, 0
    for title, row_panels in spec["rows"]:
        panels.append({"id": next_id, "type": "row", "title": title, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        next_id += 1
        y += 1
        x, row_h = 0, 0
        for p in row_panels:
            p = dict(p)
            w, h = p.pop("w"), p.pop("h")
            if x + w > 24:
                x, y = 0, y + row_h
                row_h = 0
            targets = []
            for i, query in enumerate(p.pop("queries")):
                t = {"datasource": DS, "refId": chr(ord("A") + i)}
                t.update(query)
                targets.append(t)
            panels.append({"id": next_id, **{k: p[k] for k in ("type", "title", "description")},
                           "datasource": DS, "gridPos": {"h": h, "w": w, "x": x, "y": y},
                           "fieldConfig": p["fieldConfig"], "options": p["options"],
                           "targets": targets})
            next_id += 1
            x += w
            row_h = max(row_h, h)
        y += row_h
    return {
        "uid": spec["uid"],
        "title": spec["title"],
        "description": spec["description"],
        "tags": ["loadwatch"],
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 36,
        "version": 1,
        "timezone": "",
        "time": spec["time"],
        "refresh": spec["refresh"],
        "timepicker": {},
        "links": [{"title": "loadwatch dashboards", "type": "dashboards", "tags": ["loadwatch"],
                   "asDropdown": True, "includeVars": True, "keepTime": True}],
        "annotations": {"list": annotations(spec.get("runs", False))},
        "templating": {"list": variables(spec.get("run_variable", False))},
        "panels": panels,
    }


DASHBOARDS = {
    "loadwatch-test-run.json": test_run,
    "loadwatch-soak.json": soak,
    "loadwatch-fleet.json": fleet,
}


def render(spec_fn):
    return json.dumps(build(spec_fn()), indent=2, ensure_ascii=False) + "\n"


def outputs():
    """{path: text} of every generated file."""
    out = {OUT / name: render(fn) for name, fn in DASHBOARDS.items()}
    for name, text in rulegen.render(mixin_config.load()).items():
        out[RULES / name] = text
    for profile in mixin_config.profiles():
        for name, text in rulegen.render(mixin_config.load(profile)).items():
            out[RULES / profile / name] = text
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a committed file differs")
    ap.add_argument("--profile", type=pathlib.Path,
                    help="write only the rules of this profile (merged over config.yml)")
    ap.add_argument("--out", type=pathlib.Path, help="directory for --profile's rules")
    args = ap.parse_args(argv)
    try:
        if args.profile:
            if not args.out:
                ap.error("--profile needs --out")
            files = {args.out / name: text for name, text
                     in rulegen.render(mixin_config.load(args.profile)).items()}
        else:
            files = outputs()
    except mixin_config.ConfigError as e:
        print(f"generate.py: {e}", file=sys.stderr)
        return 1
    stale = []
    for path, text in files.items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if args.check and not args.profile:
        # A profile removed from profiles/ must not leave its rules behind.
        known = set(files)
        stale += [str(p) for p in RULES.glob("*/*.yml") if p not in known]
    if stale:
        print("generate.py: out of date, run python3 dashboards/generate.py:\n  "
              + "\n  ".join(sorted(stale)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
