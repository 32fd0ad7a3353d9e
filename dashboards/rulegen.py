"""The mixin's Prometheus rules, written from a Config (mixin_config.py): recording rules and
alerts as YAML text. generate.py writes them to rules/ (and rules/<profile>/).

Windows and for: durations come from the config; every threshold is written as
    scalar(max(loadwatch:threshold:NAME) or vector(DEFAULT))
so it can be overridden at run time by a rule file recording loadwatch:threshold:NAME.
"""

import re
import textwrap

import yaml

import mixin_config

WIDTH = 96  # wrap descriptions and comments at this column


def th(name, default):
    """A threshold: the override series if one exists, else DEFAULT, as a scalar."""
    return f"scalar(max(loadwatch:threshold:{name}) or vector({default}))"


def current_processes(c):
    """Conditions that hold for a target whose processes have run, with an unchanged oldest
    start time, for the whole trend window: the window then holds data of these processes
    only. Absent while the target is down (an instant selector of the start time)."""
    w = c.window("trend")
    return [f"(time() - loadwatch_process_start_time_seconds >= {w.seconds})",
            f"(changes(loadwatch_process_start_time_seconds[{w}]) == 0)"]


def trend(c, metric):
    """deriv() of a target gauge over the trend window, for the current processes only."""
    return f"deriv({metric}[{c.window('trend')}])\n" + \
        "".join(f"  and {g}\n" for g in current_processes(c))


def last(d):
    """ "the last {last(d)}": "minute", "30 minutes", "hour"."""
    return d.words()[2:] if d.words().startswith("1 ") and " " not in d.words()[2:] \
        else d.words()


# ---- recording rules -------------------------------------------------------------------------

def record_groups(c):
    rate, tw = c.window("rate"), c.window("trend")
    return [
        ("loadwatch.target.rules", [
            ("CPU seconds per second (= cores) a target used, by mode (user, system).",
             "instance_target_mode:loadwatch_process_cpu_seconds:rate1m",
             f"rate(loadwatch_process_cpu_seconds_total[{rate}])"),
            ("Same, user + system.",
             "instance_target:loadwatch_process_cpu_seconds:rate1m",
             "sum without (mode) (instance_target_mode:loadwatch_process_cpu_seconds:rate1m)"),
            (f"Soak trends, per second: RSS bytes, open fds, fd usage ratio. Only once the "
             f"target's current processes have run for the whole window ({tw}): a restart, or "
             f"the oldest member being replaced, starts the window over, so the trend never "
             f"spans two generations of processes (nor the time the target was down).",
             "instance_target:loadwatch_process_resident_memory_bytes:deriv30m",
             trend(c, "loadwatch_process_resident_memory_bytes")),
            (None, "instance_target:loadwatch_process_open_fds:deriv30m",
             trend(c, "loadwatch_process_open_fds")),
            (None, "instance_target:loadwatch_process_fd_usage_ratio:deriv30m",
             trend(c, "loadwatch_process_fd_usage_ratio")),
        ]),
        ("loadwatch.host.rules", [
            ("Host CPU seconds per second by mode, summed over CPUs.",
             "instance_mode:loadwatch_cpu_seconds:rate1m",
             f"sum without (cpu) (rate(loadwatch_cpu_seconds_total[{rate}]))"),
            ("Share of all CPU time by mode (the modes of one instance sum to 1).",
             "instance_mode:loadwatch_cpu_seconds:ratio_rate1m",
             "instance_mode:loadwatch_cpu_seconds:rate1m\n"
             "  / ignoring (mode) group_left ()\n"
             "sum without (mode) (instance_mode:loadwatch_cpu_seconds:rate1m)\n"),
            ("Busy share: user + nice + system + irq + softirq. Idle and iowait are waiting, "
             "steal is time the hypervisor gave to someone else.",
             "instance:loadwatch_cpu_seconds_busy:ratio_rate1m",
             "sum without (mode) (\n"
             '  instance_mode:loadwatch_cpu_seconds:ratio_rate1m{mode!~"idle|iowait|steal"}\n'
             ")\n"),
            ("softirq time (network packet processing, mostly) as a share of busy time.",
             "instance:loadwatch_cpu_seconds_softirq_per_busy:ratio_rate1m",
             'sum without (mode) (instance_mode:loadwatch_cpu_seconds:rate1m{mode="softirq"})\n'
             "  /\n"
             'sum without (mode) (instance_mode:loadwatch_cpu_seconds:rate1m{mode!~"idle|iowait|steal"})\n'),
            ("Soak trend of available memory, bytes per second (negative while it shrinks).",
             "instance:loadwatch_memory_available_bytes:deriv30m",
             f"deriv(loadwatch_memory_available_bytes[{tw}])"),
        ]),
        ("loadwatch.network.rules", [
            ("Connections the kernel dropped because an accept queue was full (somaxconn / "
             "backlog).",
             "instance:loadwatch_tcp_listen_overflows:rate1m",
             f"rate(loadwatch_tcp_listen_overflows_total[{rate}])"),
            (None, "instance:loadwatch_tcp_listen_drops:rate1m",
             f"rate(loadwatch_tcp_listen_drops_total[{rate}])"),
            ("New inbound connections per second: the fleet view of how a load balancer spreads "
             "load.",
             "instance:loadwatch_tcp_passive_opens:rate1m",
             f"rate(loadwatch_tcp_passive_opens_total[{rate}])"),
            ("Soak trend of ephemeral-port usage, ratio per second.",
             "instance:loadwatch_tcp_ephemeral_port_usage_ratio:deriv30m",
             f"deriv(loadwatch_tcp_ephemeral_port_usage_ratio[{tw}])"),
        ]),
        ("loadwatch.source.rules", [
            ("Load generator (Locust, JMeter, ...) whole-test requests and failures per second.",
             "instance_source:loadwatch_generator_requests:rate1m",
             f"rate(loadwatch_generator_requests_total[{rate}])"),
            (None, "instance_source:loadwatch_generator_failures:rate1m",
             f"rate(loadwatch_generator_failures_total[{rate}])"),
            ("Failed requests / requests; NaN (no sample shown, no alert) while nothing is sent.",
             "instance_source:loadwatch_generator_failures_per_requests:ratio_rate1m",
             "instance_source:loadwatch_generator_failures:rate1m\n"
             "  /\n"
             "instance_source:loadwatch_generator_requests:rate1m\n"),
            ("Mock server (Mountebank) requests per second, per imposter.",
             "instance_source_imposter:loadwatch_mock_requests:rate1m",
             f"rate(loadwatch_mock_requests_total[{rate}])"),
            (None, "instance_source_imposter:loadwatch_mock_unmatched_requests:rate1m",
             f"rate(loadwatch_mock_unmatched_requests_total[{rate}])"),
        ]),
    ]


def records_header(c):
    return [
        "loadwatch mixin: recording rules for the rates the dashboards and alerts use.",
        "",
        "Names follow the Prometheus convention level:metric:operations",
        "(https://prometheus.io/docs/practices/rules/):",
        "  level      the labels the result keeps besides job (instance, target, mode, source, ...)",
        "  metric     the loadwatch metric name, minus _total under rate()",
        "  operations newest first: rate1m, deriv30m, ratio_rate1m (a ratio of 1m rates)",
        "",
        f"Windows in this file: rate() over {c.window('rate')}, trends (deriv) over "
        f"{c.window('trend')}. The names keep",
        "the default windows (1m, 30m) in every profile, so the dashboards and your queries work",
        "with any profile. rate() needs a scrape interval of a quarter of its window or less.",
    ]


# ---- alerts ----------------------------------------------------------------------------------

LISTENER_OWNER = '{{ if .Labels.owner }}{{ .Labels.owner }}{{ else }}owner unknown{{ end }}'


def fullest_listeners(c, k):
    """Template query: the k listeners of the alerting host whose accept queue was fullest in
    the window (highest sampled queue length over the backlog limit), fullest first."""
    w = c.window("listen_overflows")
    sel = "{job=%q, instance=%q}"
    q = (f"sort_desc(topk({k}, max_over_time(loadwatch_tcp_listen_top_queue_length{sel}[{w}])"
         f" / max_over_time(loadwatch_tcp_listen_top_queue_max{sel}[{w}])))")
    return f"query (printf `{q}` $labels.job $labels.instance $labels.job $labels.instance)"


def alert_groups(c):
    tw = c.window("trend")
    f = lambda name: c.for_of(name)  # noqa: E731
    lasting = lambda name: (f" for {f(name).words()}" if f(name).seconds else "")  # noqa: E731
    lo = c.window("listen_overflows")
    return [
        ("loadwatch.targets", [
            dict(alert="LoadwatchTargetDown",
                 expr="loadwatch_target_up == 0",
                 severity="critical",
                 summary="Target {{ $labels.target }} on {{ $labels.instance }} has no process.",
                 description=(
                     f"No process has matched target {{{{ $labels.target }}}} on "
                     f"{{{{ $labels.instance }}}}{lasting('LoadwatchTargetDown')}: the service "
                     "under test or the mock is not running, and every number the load test "
                     "produces from now on is measuring errors. Check whether it crashed or was "
                     "stopped (systemctl status / journalctl -u for its unit, the exit status, "
                     "dmesg for the OOM killer), and whether loadwatch's selector for it "
                     "(--target or the config file's match:) still matches after a restart "
                     "under a new pid, pid file or command line.")),
            dict(alert="LoadwatchTargetRestarted",
                 expr=(f"increase(loadwatch_target_restarts_total[{c.window('restarts')}])\n"
                       f"  > {th('target_restarts', 0)}\n"),
                 severity="warning",
                 summary="Target {{ $labels.target }} on {{ $labels.instance }} restarted.",
                 description=(
                     "Target {{ $labels.target }} on {{ $labels.instance }} came back after "
                     "being down, or all of its processes were replaced, within the last "
                     f"{last(c.window('restarts'))} (about {{{{ $value | printf \"%.0f\" }}}} "
                     "time(s)). A restart during a run resets caches, connection pools and "
                     "leaks, so results around it are not comparable. Check the service's log "
                     "and exit status (journalctl), dmesg for the OOM killer, and on the "
                     "\"loadwatch / Test run\" dashboard the RSS peak and fd usage just before "
                     "the restart annotation.")),
            dict(alert="LoadwatchMemoryLeakSuspected",
                 expr=(
                     "(\n"
                     "  instance_target:loadwatch_process_resident_memory_bytes:deriv30m * 1800\n"
                     f"    > {th('memory_growth_bytes_30m', 104857600)}\n"
                     ")\n"
                     "and\n"
                     "(\n"
                     "  predict_linear(\n"
                     f"    loadwatch_process_resident_memory_bytes[{tw}],\n"
                     f"    {th('memory_leak_horizon_seconds', 14400)}\n"
                     "  )\n"
                     "    - loadwatch_process_resident_memory_bytes\n"
                     "  > on (job, instance) group_left ()\n"
                     "  loadwatch_memory_available_bytes\n"
                     f"    * {th('memory_leak_available_ratio', 1)}\n"
                     ")\n"),
                 severity="warning",
                 summary="Memory of {{ $labels.target }} on {{ $labels.instance }} keeps growing.",
                 description=(
                     "The RSS of target {{ $labels.target }} on {{ $labels.instance }} grows by "
                     "{{ $value | humanize1024 }}B per 30 minutes (least-squares trend over the "
                     f"last {last(tw)} of its current processes), and at that rate would grow "
                     "by more than the memory available on the host within the horizon "
                     "(thresholds memory_leak_horizon_seconds, default 4 hours, and "
                     "memory_leak_available_ratio, default 1). Check on the \"loadwatch / Soak\" "
                     "dashboard whether the growth is steady (a leak) or a warm-up that flattens "
                     "(caches, JIT, connection pools); compare the RSS peak with the heap limit "
                     "(e.g. Node's --max-old-space-size, the JVM's -Xmx); take a heap snapshot "
                     "before the OOM killer does.")),
            dict(alert="LoadwatchFdExhaustion",
                 expr=(
                     "loadwatch_process_fd_usage_ratio\n"
                     f"  > {th('fd_usage_ratio', 0.8)}\n"
                     "or\n"
                     "(\n"
                     "  loadwatch_process_fd_usage_ratio\n"
                     "    and\n"
                     "  predict_linear(\n"
                     f"    loadwatch_process_fd_usage_ratio[{tw}],\n"
                     f"    {th('fd_exhaustion_horizon_seconds', 3600)}\n"
                     "  ) >= 1\n"
                     + "".join(f"    and {g}\n" for g in current_processes(c)) +
                     ")\n"),
                 severity="critical",
                 summary="{{ $labels.target }} on {{ $labels.instance }} is running out of file "
                         "descriptors.",
                 description=(
                     "A process of target {{ $labels.target }} on {{ $labels.instance }} uses "
                     "{{ $value | humanizePercentage }} of its open-file limit (soft "
                     "RLIMIT_NOFILE; the threshold defaults to 80%), or its trend over the last "
                     f"{last(tw)} of its current processes reaches the limit within the "
                     "horizon (threshold fd_exhaustion_horizon_seconds, default 1 hour). At the "
                     "limit accept() and connect() fail with EMFILE (\"Too many open files\"). "
                     "Check whether the fd count tracks the connection count "
                     "(loadwatch_process_tcp_connections: a connection leak or missing "
                     "keep-alive) or grows on its own (files not closed), and the limit in "
                     "force (loadwatch_process_max_fds; LimitNOFILE= in the unit, ulimit -n).")),
        ]),
        ("loadwatch.network", [
            dict(alert="LoadwatchEphemeralPortsNearExhaustion",
                 expr=("loadwatch_tcp_ephemeral_port_usage_ratio\n"
                       f"  > {th('ephemeral_port_usage_ratio', 0.8)}\n"),
                 severity="critical",
                 summary="Ephemeral ports on {{ $labels.instance }} are nearly exhausted.",
                 description=(
                     "{{ $value | humanizePercentage }} of the local port range "
                     "(net.ipv4.ip_local_port_range) is in use towards one remote address and "
                     "port on {{ $labels.instance }}; new outbound connections to it will fail "
                     "with EADDRNOTAVAIL (\"Cannot assign requested address\"). Typical on the "
                     "load generator or a proxy without keep-alive. Check TIME_WAIT on the "
                     "\"loadwatch / Test run\" dashboard, enable keep-alive / connection reuse "
                     "in the client, widen the port range, or consider net.ipv4.tcp_tw_reuse.")),
            dict(alert="LoadwatchTimeWaitNearLimit",
                 expr=("loadwatch_sockstat_tcp_time_wait\n"
                       "  / on (job, instance)\n"
                       'loadwatch_sysctl{name="net.ipv4.tcp_max_tw_buckets"}\n'
                       f"  > {th('time_wait_bucket_ratio', 0.8)}\n"),
                 severity="warning",
                 summary="TIME_WAIT sockets on {{ $labels.instance }} are near "
                         "net.ipv4.tcp_max_tw_buckets.",
                 description=(
                     "{{ $labels.instance }} holds TIME_WAIT sockets at {{ $value | "
                     "humanizePercentage }} of net.ipv4.tcp_max_tw_buckets. Beyond the limit the "
                     "kernel destroys them early (\"TCP: time wait bucket table overflow\" in "
                     "dmesg, loadwatch_tcp_timewait_overflows_total rising), and the ephemeral "
                     "ports they hold are a sign of short-lived connections. Check whether the "
                     "client or the server closes first, whether keep-alive is off, and the "
                     "ephemeral-port usage on the same host.")),
            dict(alert="LoadwatchListenOverflows",
                 expr=(f"rate(loadwatch_tcp_listen_overflows_total[{lo}]) * 300\n"
                       f"  > {th('listen_overflows_5m', 0)}\n"),
                 severity="warning",
                 summary=("Accept queues overflow on {{ $labels.instance }}"
                          f"{{{{ range {fullest_listeners(c, 1)} }}}}, fullest: port "
                          f"{{{{ .Labels.port }}}} ({LISTENER_OWNER}){{{{ end }}}}."),
                 description=(
                     "{{ $labels.instance }} dropped about {{ $value | printf \"%.0f\" }} "
                     "incoming connection(s) per 5 minutes"
                     + ("" if lo.seconds == 300 else f" over the last {last(lo)}") +
                     " because a listener's accept queue was full: the clients see connect "
                     "timeouts or resets while the server looks idle. Fullest accept queues of "
                     f"the host in the last {last(lo)} (any listener, highest sampled queue "
                     f"over its backlog): {{{{ range {fullest_listeners(c, 3)} }}}}port "
                     f"{{{{ .Labels.port }}}} ({LISTENER_OWNER}) at {{{{ .Value | "
                     "humanizePercentage }}; {{ else }}none sampled (a queue that fills and "
                     "drains between two samples is not seen); {{ end }}see \"Fullest "
                     "listeners (host-wide)\" on the \"loadwatch / Test run\" dashboard. Raise "
                     "net.core.somaxconn and the application's listen backlog, or find why the "
                     "application accepts slowly (event loop blocked, too few workers).")),
            dict(alert="LoadwatchHostCPUSaturated",
                 expr=('sum without (mode) (instance_mode:loadwatch_cpu_seconds:ratio_rate1m'
                       '{mode=~"idle|iowait"})\n'
                       f"  < {th('cpu_idle_ratio', 0.1)}\n"),
                 severity="warning",
                 summary="CPU of {{ $labels.instance }} is saturated.",
                 description=(
                     "{{ $labels.instance }} has been idle (iowait included) less than the "
                     "threshold (default 10%; now {{ $value | humanizePercentage }})"
                     f"{lasting('LoadwatchHostCPUSaturated')}: throughput measured on this host "
                     "is capped by its CPU. Check on the \"loadwatch / Test run\" dashboard "
                     "whether the time goes to the target (user), the kernel (system, softirq: "
                     "network processing) or another process; if this host is the load "
                     "generator, the test is measuring the generator, not the system under "
                     "test.")),
            dict(alert="LoadwatchHostSoftirqHigh",
                 expr=("(\n"
                       "  instance:loadwatch_cpu_seconds_softirq_per_busy:ratio_rate1m\n"
                       f"    > {th('softirq_busy_ratio', 0.3)}\n"
                       ")\n"
                       "and on (job, instance)\n"
                       "(\n"
                       "  instance:loadwatch_cpu_seconds_busy:ratio_rate1m\n"
                       f"    > {th('softirq_min_busy_ratio', 0.5)}\n"
                       ")\n"),
                 severity="warning",
                 summary="softirq takes a high share of the busy CPU on {{ $labels.instance }}.",
                 description=(
                     "{{ $value | humanizePercentage }} of the busy CPU time of "
                     "{{ $labels.instance }} (busier than the threshold, default 50%) is "
                     "softirq, mostly network packet processing (NET_RX / NET_TX in "
                     "loadwatch_softirqs_total). Throughput plateaus here are often the network "
                     "stack, not the application. Check whether one CPU takes all softirqs "
                     "(loadwatch_cpu_seconds_total{mode=\"softirq\"} per cpu: "
                     "RSS/RPS/irqbalance), the packet rates and drops of the interfaces, and "
                     "small-request overhead (keep-alive, batching).")),
        ]),
        ("loadwatch.sources", [
            dict(alert="LoadwatchGeneratorFailureRatioHigh",
                 expr=("instance_source:loadwatch_generator_failures_per_requests:ratio_rate1m\n"
                       f"  > {th('generator_failure_ratio', 0.01)}\n"),
                 severity="warning",
                 summary="Load generator {{ $labels.source }} on {{ $labels.instance }} sees "
                         "failing requests.",
                 description=(
                     "{{ $value | humanizePercentage }} of the requests sent by load generator "
                     "{{ $labels.source }} (on {{ $labels.instance }}) failed over the last "
                     f"{last(c.window('rate'))}. Check the generator's failure messages "
                     "(Locust's /stats/failures, JMeter's results), the target hosts for down "
                     "targets, fd or ephemeral-port exhaustion and listen overflows, and the "
                     "mock's unmatched requests: errors usually show up there first.")),
            dict(alert="LoadwatchGeneratorLatencyHigh",
                 expr=('loadwatch_generator_latency_seconds{quantile="0.99"}\n'
                       f"  > {th('generator_p99_latency_seconds', 1)}\n"),
                 severity="warning",
                 summary="P99 latency seen by {{ $labels.source }} on {{ $labels.instance }} is "
                         "high.",
                 description=(
                     "Load generator {{ $labels.source }} on {{ $labels.instance }} reports a "
                     "P99 latency of {{ $value | humanizeDuration }}, above the threshold. Check "
                     "on the \"loadwatch / Test run\" dashboard where the time goes: CPU "
                     "saturation or softirq on the target host, accept-queue overflows, a mock "
                     "that slows down, or the generator's own host running out of CPU (then the "
                     "latency is the generator's).")),
            dict(alert="LoadwatchSourceDown",
                 expr="loadwatch_source_up == 0",
                 severity="warning",
                 summary="loadwatch on {{ $labels.instance }} cannot read source "
                         "{{ $labels.source }}.",
                 description=(
                     "loadwatch on {{ $labels.instance }} has failed"
                     f"{lasting('LoadwatchSourceDown')} to read {{{{ $labels.kind }}}} source "
                     "{{ $labels.source }}, so its requests, failures and latencies are missing "
                     "from the dashboards. Check that the mock or generator is running and that "
                     "its URL in loadwatch's --source / config is right, and "
                     "loadwatch_source_errors_total{source=\"{{ $labels.source }}\"} for the "
                     "reason (timeout, connect, http_status, parse, too_large, credentials: its "
                     "own password, token, certificate or CA file).")),
        ]),
        ("loadwatch.self", [
            dict(alert="LoadwatchNotSampling",
                 expr=("(\n"
                       "  timestamp(loadwatch_last_sample_timestamp_seconds)\n"
                       "    - loadwatch_last_sample_timestamp_seconds\n"
                       f"  > {th('sample_staleness_seconds', 30)}\n"
                       ")\n"
                       "or\n"
                       "(\n"
                       "  present_over_time(loadwatch_last_sample_timestamp_seconds"
                       f"[{c.window('not_sampling')}])\n"
                       "    unless\n"
                       "  loadwatch_last_sample_timestamp_seconds\n"
                       ")\n"),
                 severity="critical",
                 summary="loadwatch on {{ $labels.instance }} is not sampling.",
                 description=(
                     "loadwatch on {{ $labels.instance }} either has not taken a sample for "
                     "longer than the threshold while still answering scrapes, or stopped "
                     f"answering scrapes within the last {last(c.window('not_sampling'))}: the "
                     "dashboards show stale or no data for this host. Check the Prometheus "
                     "targets page for the scrape error, systemctl status / journalctl -u "
                     "loadwatch, and loadwatch_collector_duration_seconds for a collector that "
                     "takes too long. (The staleness check compares the Prometheus scrape time "
                     "with loadwatch's own clock: clock skew between the hosts adds to it.)")),
            dict(alert="LoadwatchSampleGap",
                 expr=f"increase(loadwatch_sample_gap_seconds_total[{c.window('time_jumps')}]) > 0\n",
                 severity="warning",
                 summary="loadwatch on {{ $labels.instance }} took no sample for a while.",
                 description=(
                     "loadwatch on {{ $labels.instance }} went about "
                     "{{ $value | humanizeDuration }} without a sample in the last "
                     f"{last(c.window('time_jumps'))}: it, or the host or VM it runs on, was "
                     "stopped or stalled (a paused VM, SIGSTOP, a read that hung). Nothing was "
                     "sampled then, and on the system under test the pause stopped the service "
                     "too: a latency spike or a dip in throughput at that moment is the pause. "
                     "Check the hypervisor's pause and steal figures, and journalctl -u loadwatch "
                     "for \"no sample for\".")),
            dict(alert="LoadwatchClockStepped",
                 expr=f"increase(loadwatch_clock_steps_total[{c.window('time_jumps')}]) > 0\n",
                 severity="warning",
                 summary="The wall clock of {{ $labels.instance }} was set.",
                 description=(
                     "The wall clock of {{ $labels.instance }} moved apart from its monotonic "
                     "clock about {{ $value | printf \"%.0f\" }} time(s) in the last "
                     f"{last(c.window('time_jumps'))}: set by hand or by NTP, or again after its "
                     "VM resumed. Unix timestamps on either side of a step, and a rate over a "
                     "window across one, are off by the step (a run report leaves such a req/s "
                     "out). Let NTP slew rather than step the clock, and see journalctl -u "
                     "loadwatch for the step's size.")),
            dict(alert="LoadwatchThresholdOverrideAmbiguous",
                 expr=("label_replace(\n"
                       '  count by (__name__) ({__name__=~"loadwatch:threshold:.+"}),\n'
                       '  "threshold", "$1", "__name__", "(.+)"\n'
                       ") > 1\n"),
                 severity="warning",
                 summary="Threshold {{ $labels.threshold }} is defined {{ $value }} times.",
                 description=(
                     "More than one series named {{ $labels.threshold }} exists: two rule files "
                     "record it with different labels, or a rule adds labels to it. The alerts "
                     "use the highest value. Keep exactly one label-free recording rule per "
                     "threshold.")),
        ]),
    ]


def alerts_header(c):
    return [
        "loadwatch mixin: alerts for load, stress and soak runs. Load with loadwatch.rules.yml.",
        "",
        "Thresholds: every tunable number is written as",
        "    scalar(max(loadwatch:threshold:NAME) or vector(DEFAULT))",
        "so it can be overridden WITHOUT editing this file: load a rule file that records the "
        "series",
        "loadwatch:threshold:NAME (see thresholds.example.yml). Why this shape:",
        "  - scalar(...) compares every series against one number, with no label matching: a",
        "    label-free override series could never match the job/instance/target labels of the",
        "    alerting series in a vector-to-vector comparison.",
        "  - max(...) strips whatever labels the override carries and turns two overrides for the",
        "    same NAME into one (the highest) instead of a scalar() of two series, which is NaN "
        "and",
        "    would silently disable the alert. LoadwatchThresholdOverrideAmbiguous reports that "
        "case.",
        "  - \"or vector(DEFAULT)\" supplies the default while no override series exists.",
        "Range windows and for: durations come from the mixin's config (config.yml and its",
        "profiles), see README.md.",
    ]


# ---- YAML text -------------------------------------------------------------------------------

def _comment(text, indent):
    lines = []
    for para in text.split("\n"):
        wrapped = textwrap.wrap(para, WIDTH - len(indent) - 2, break_long_words=False,
                                break_on_hyphens=False) or [""]
        lines += [f"{indent}# {w}".rstrip() for w in wrapped]
    return lines


def _expr(expr, indent):
    expr = expr.rstrip("\n")
    if "\n" not in expr:
        return [f"{indent}expr: {expr}"]
    return [f"{indent}expr: |"] + [f"{indent}  {line}".rstrip() for line in expr.split("\n")]


def _folded(key, text, indent):
    # A short template action ({{ $labels.target }}) stays on one line: its spaces are held
    # by a placeholder while wrapping. Long ones (a query) may break at any space.
    glue = "\x00"
    held = re.sub(r"\{\{[^{}]{0,40}\}\}", lambda m: m.group(0).replace(" ", glue), text)
    wrapped = textwrap.wrap(held, WIDTH - len(indent) - 2, break_long_words=False,
                            break_on_hyphens=False)
    return [f"{indent}{key}: >-"] + [f"{indent}  {w.replace(glue, ' ')}" for w in wrapped]


def _quoted(text):
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    out = ['"']
    for ch in text:
        out.append({'"': '\\"', "\\": "\\\\"}.get(ch, ch))
    out.append('"')
    return "".join(out)


def _source_note(c):
    if c.profile:
        return [f"GENERATED by dashboards/generate.py from config.yml with profiles/{c.profile}.yml "
                f"merged over it:", "edit those and regenerate, not this file."]
    return ["GENERATED by dashboards/generate.py from config.yml: edit that (or generate.py) and",
            "regenerate, not this file."]


def render_records(c):
    lines = [f"# {line}".rstrip() for line in records_header(c) + [""] + _source_note(c)]
    lines.append("groups:")
    for n, (group, rules) in enumerate(record_groups(c)):
        if n:
            lines.append("")
        lines += [f"  - name: {group}", "    rules:"]
        for comment, record, expr in rules:
            if comment:
                lines += _comment(comment, "      ")
            lines.append(f"      - record: {record}")
            lines += _expr(expr, "        ")
    return "\n".join(lines) + "\n"


def render_alerts(c):
    lines = [f"# {line}".rstrip() for line in alerts_header(c) + [""] + _source_note(c)]
    lines.append("groups:")
    for n, (group, alerts) in enumerate(alert_groups(c)):
        if n:
            lines.append("")
        lines += [f"  - name: {group}", "    rules:"]
        for i, a in enumerate(alerts):
            if i:
                lines.append("")
            lines.append(f"      - alert: {a['alert']}")
            lines += _expr(a["expr"], "        ")
            duration = c.for_of(a["alert"])
            if duration.seconds:
                lines.append(f"        for: {duration}")
            lines += ["        labels:", f"          severity: {a['severity']}",
                      "        annotations:",
                      f"          summary: {_quoted(a['summary'])}"]
            lines += _folded("description", a["description"], "          ")
    return "\n".join(lines) + "\n"


def expected_alerts(c):
    """The alert rules as Prometheus must read them back from render_alerts()."""
    out = []
    for _, alerts in alert_groups(c):
        for a in alerts:
            rule = {"alert": a["alert"], "expr": a["expr"].rstrip("\n") + (
                "\n" if "\n" in a["expr"].rstrip("\n") else "")}
            if c.for_of(a["alert"]).seconds:
                rule["for"] = str(c.for_of(a["alert"]))
            rule["labels"] = {"severity": a["severity"]}
            rule["annotations"] = {"summary": a["summary"], "description": a["description"]}
            out.append(rule)
    return out


def render(c):
    """{file name: text}; each text is parsed back and compared with what was meant."""
    names = {a["alert"] for _, alerts in alert_groups(c) for a in alerts}
    unknown = sorted(set(c.for_) - names)
    if unknown:
        raise mixin_config.ConfigError(f"for: of alerts that do not exist: {', '.join(unknown)}")
    files = {"loadwatch.rules.yml": render_records(c), "loadwatch.alerts.yml": render_alerts(c)}
    alerts = [r for g in yaml.safe_load(files["loadwatch.alerts.yml"])["groups"]
              for r in g["rules"]]
    if alerts != expected_alerts(c):
        raise AssertionError("rendered alerts do not read back as written")
    records = [(r["record"], r["expr"].rstrip("\n"))
               for g in yaml.safe_load(files["loadwatch.rules.yml"])["groups"] for r in g["rules"]]
    meant = [(rec, expr.rstrip("\n")) for _, rules in record_groups(c) for _, rec, expr in rules]
    if records != meant:
        raise AssertionError("rendered recording rules do not read back as written")
    return files
