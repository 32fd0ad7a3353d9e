// The live page: per-second charts of the daemon's history (/api/v1/history), drawn with
// uPlot, and the current run's phases (/api/v1/runs) as shaded bands. Only what is new since
// the last point is fetched, at most once per sample interval.
"use strict";
(function () {
  const WINDOW_SECONDS = 15 * 60; // what the charts show and keep
  const MAX_PER_REQUEST = 100;    // the endpoint's cap on series per request
  const RELIST_MS = 30000;        // new targets or sources appear after this long at most
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

  const chartsEl = document.getElementById("charts");
  const runEl = document.getElementById("live-run");
  let intervalMs = 1000;
  let charts = [];       // {title, keys, labels, plot, data}
  let lastTime = 0;      // newest timestamp received
  let listedAt = 0;
  let listedKeys = "";
  let phases = [];       // [{name, start, end, users}] of the current run
  // The runs hook: the page asks for runs only when the landing page links the runs API (a
  // build with it); a 404 (an older daemon) turns it off for good.
  let runsApi = !!document.querySelector('a[href="/api/v1/runs"]');

  function labelsOf(key) {
    const out = {};
    const i = key.indexOf("{");
    if (i < 0) return out;
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    let m;
    while ((m = re.exec(key.slice(i))) !== null) out[m[1]] = m[2].replace(/\\(.)/g, "$1");
    return out;
  }

  // Chart definitions from the series the daemon keeps: one group per target, the host, one
  // group per source.
  function plan(list) {
    const groups = new Map();
    function chart(group, title, unit, series, label) {
      if (!groups.has(group)) groups.set(group, new Map());
      const g = groups.get(group);
      if (!g.has(title)) g.set(title, {title: title, unit: unit, keys: [], labels: []});
      const c = g.get(title);
      c.keys.push(series.series);
      c.labels.push(label);
    }
    for (const s of list) {
      const l = s.labels;
      switch (s.family) {
        case "loadwatch_process_cpu_seconds_total":
          chart("Target " + l.target, "CPU (cores)", "cores", s, l.mode); break;
        case "loadwatch_process_resident_memory_bytes":
          chart("Target " + l.target, "RSS", "bytes", s, "rss"); break;
        case "loadwatch_process_open_fds":
          chart("Target " + l.target, "Open fds", "", s, "open fds"); break;
        case "loadwatch_process_threads":
          chart("Target " + l.target, "Threads", "", s, "threads"); break;
        case "loadwatch_cpu_seconds_total":
          if (l.mode === "softirq") chart("Host", "Host softirq (cores)", "cores", s, "softirq");
          else chart("Host", "Host CPU by mode (cores)", "cores", s, l.mode);
          break;
        case "loadwatch_tcp_connections":
          chart("Host", "TCP connections by state", "", s, l.state); break;
        case "loadwatch_tcp_ephemeral_port_usage_ratio":
          chart("Host", "Ephemeral ports and listen overflows", "", s, "ephemeral port ratio");
          break;
        case "loadwatch_tcp_listen_overflows_total":
          chart("Host", "Ephemeral ports and listen overflows", "", s, "listen overflows/s");
          break;
        case "loadwatch_generator_requests_per_second":
          chart("Source " + l.source, "Requests per second", "", s, "rps"); break;
        case "loadwatch_generator_latency_seconds":
          chart("Source " + l.source, "Latency (s)", "s", s, "p" + Math.round(l.quantile * 1000) / 10);
          break;
        case "loadwatch_generator_failures_total":
          chart("Source " + l.source, "Errors per second", "", s, "failures/s"); break;
        case "loadwatch_generator_users":
          chart("Source " + l.source, "Users", "", s, "users"); break;
        case "loadwatch_mock_requests_total":
          chart("Source " + l.source, "Mock requests per second", "", s,
                l.imposter ? "imposter " + l.imposter : "requests/s");
          break;
      }
    }
    return groups;
  }

  function fmtValue(unit) {
    return function (u, v) {
      if (v == null) return "–";
      if (unit === "bytes") {
        const k = ["B", "KiB", "MiB", "GiB", "TiB"];
        let i = 0;
        while (Math.abs(v) >= 1024 && i < k.length - 1) { v /= 1024; i++; }
        return v.toFixed(i ? 1 : 0) + " " + k[i];
      }
      if (Math.abs(v) >= 100) return v.toFixed(0);
      return +v.toPrecision(3) + "";
    };
  }

  // Shaded bands for the current run's phases, with their user counts.
  function phaseBands(u) {
    if (!phases.length) return;
    const ctx = u.ctx;
    const top = u.bbox.top, height = u.bbox.height;
    ctx.save();
    ctx.font = Math.round(11 * devicePixelRatio) + "px sans-serif";
    ctx.textBaseline = "top";
    phases.forEach(function (p, i) {
      const end = p.end == null ? lastTime : p.end;
      const x0 = Math.max(u.valToPos(p.start, "x", true), u.bbox.left);
      const x1 = Math.min(u.valToPos(end, "x", true), u.bbox.left + u.bbox.width);
      if (x1 <= x0) return;
      ctx.fillStyle = i % 2 ? "rgba(255,165,0,0.12)" : "rgba(70,130,180,0.12)";
      ctx.fillRect(x0, top, x1 - x0, height);
      ctx.fillStyle = "#555";
      const text = p.users != null ? p.users + " users" : p.name;
      ctx.fillText(text, x0 + 3, top + 2);
    });
    ctx.restore();
  }

  function width(el) {
    return Math.max(280, Math.floor(el.getBoundingClientRect().width) || 560);
  }

  function build(groups) {
    charts.forEach(function (c) { c.plot.destroy(); });
    charts = [];
    chartsEl.textContent = "";
    if (!groups.size) {
      const p = document.createElement("p");
      p.id = "live-status";
      p.textContent = "No series recorded yet.";
      chartsEl.appendChild(p);
      return;
    }
    const pending = [];
    for (const [group, defs] of groups) {
      const g = document.createElement("section");
      g.className = "live-group";
      const h = document.createElement("h3");
      h.textContent = group;
      g.appendChild(h);
      const grid = document.createElement("div");
      grid.className = "live-grid";
      g.appendChild(grid);
      chartsEl.appendChild(g);
      for (const def of defs.values()) {
        const el = document.createElement("div");
        el.className = "live-chart";
        el.dataset.title = def.title;
        grid.appendChild(el);
        pending.push({def: def, el: el});
      }
    }
    // Sized once every chart's box is laid out, so that charts sharing a row share its width.
    for (const p of pending) {
      const def = p.def;
      const series = [{value: "{YYYY}-{MM}-{DD} {HH}:{mm}:{ss}"}];
      def.labels.forEach(function (label, i) {
        // Idle hides the busy modes: off until its legend entry is clicked.
        series.push({label: label, stroke: COLORS[i % COLORS.length], width: 1.5,
                     value: fmtValue(def.unit), spanGaps: false, show: label !== "idle"});
      });
      const data = [[]].concat(def.keys.map(function () { return []; }));
      const opts = {
        title: def.title, width: width(p.el), height: 200, series: series,
        scales: {x: {time: true}},
        axes: [{}, {size: 80, values: function (u, vals) {
          return vals.map(function (v) { return fmtValue(def.unit)(u, v); });
        }}],
        hooks: {drawClear: [phaseBands]},
      };
      charts.push({def: def, plot: new uPlot(opts, data, p.el), data: data, el: p.el});
    }
  }

  // A 503 (the daemon's answer builders busy with other readers) is asked again after its
  // Retry-After, a few times, before the update counts as failed.
  function get(url, tries) {
    // The origin alone: a page opened as https://user:pass@host/ must not put them in fetch URLs.
    return fetch(location.origin + url, {credentials: "same-origin", cache: "no-store"}).then(function (r) {
      if (r.status !== 503 || tries <= 1) return r;
      const wait = Math.min(Number(r.headers.get("Retry-After")) || 1, 5);
      return new Promise(function (ok) { setTimeout(ok, 1000 * wait); }).then(function () {
        return get(url, tries - 1);
      });
    });
  }

  function getJSON(url) {
    return get(url, 3).then(function (r) {
      if (!r.ok) throw new Error(url + ": HTTP " + r.status);
      return r.json();
    });
  }

  function relist() {
    return getJSON("/api/v1/history/series").then(function (j) {
      intervalMs = Math.max(1000 * (j.interval_seconds || 1), 250);
      listedAt = Date.now();
      const keys = j.data.map(function (s) { return s.series; }).join("\n");
      if (keys === listedKeys && charts.length) return;
      listedKeys = keys;
      build(plan(j.data));
      lastTime = 0; // the new charts start empty: fetch their window
    });
  }

  // Fetches the points after lastTime for every chart's series, appends them, trims the window.
  function update() {
    const keys = [];
    charts.forEach(function (c) { c.def.keys.forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
    if (!keys.length) return Promise.resolve();
    const since = lastTime || (Date.now() / 1000 - WINDOW_SECONDS);
    const requests = [];
    for (let i = 0; i < keys.length; i += MAX_PER_REQUEST) {
      const part = keys.slice(i, i + MAX_PER_REQUEST);
      requests.push(getJSON("/api/v1/history?rate=1&since=" + since + "&series=" +
                            encodeURIComponent(part.join(","))));
    }
    return Promise.all(requests).then(function (answers) {
      const column = new Map();
      let times = null;
      answers.forEach(function (a) {
        if (!times || a.data[0].length < times.length) times = a.data[0];
        a.series.forEach(function (k, i) { if (i) column.set(k, a.data[i]); });
      });
      if (!times || !times.length) return;
      const n = times.length;
      const newest = times[n - 1];
      const oldest = newest - WINDOW_SECONDS;
      charts.forEach(function (c) {
        c.data[0].push.apply(c.data[0], times);
        c.def.keys.forEach(function (k, i) {
          const col = column.get(k) || [];
          for (let j = 0; j < n; j++) c.data[i + 1].push(j < col.length ? col[j] : null);
        });
        let cut = 0;
        while (cut < c.data[0].length && c.data[0][cut] < oldest) cut++;
        if (cut) c.data.forEach(function (col) { col.splice(0, cut); });
        c.plot.setData(c.data);
      });
      lastTime = newest;
    });
  }

  // The current run (the first listed while running) and its phases. Isolated: a build without
  // the runs API answers 404 once and the page stops asking.
  function updateRun() {
    if (!runsApi) return Promise.resolve();
    // The newest run with its phases: the open one is listed first.
    return get("/api/v1/runs?limit=1&phases=1", 3).then(function (r) {
      if (r.status === 404) { runsApi = false; return null; }
      if (!r.ok) throw new Error("/api/v1/runs: HTTP " + r.status);
      return r.json();
    }).then(function (j) {
      if (!j) return;
      const runs = Array.isArray(j.data) ? j.data : [];
      const open = runs.find(function (r) { return r.state === "running"; });
      phases = open && Array.isArray(open.phases) ? open.phases : [];
      runEl.textContent = open ? "Run " + open.name + (phases.length ? ": phase " +
          phases[phases.length - 1].name : "") : "";
    });
  }

  function failed(text) {
    let p = document.getElementById("live-status");
    if (!p) {
      p = document.createElement("p");
      p.id = "live-status";
      chartsEl.insertBefore(p, chartsEl.firstChild);
    }
    p.textContent = text;
    p.dataset.failed = "1";
  }

  // The failure line says "retrying": it goes once a retry has worked, or it would stay until
  // the list of series changed.
  function recovered() {
    const p = document.getElementById("live-status");
    if (p && p.dataset.failed) p.remove();
  }

  function tick() {
    const started = Date.now();
    const steps = (Date.now() - listedAt > RELIST_MS ? relist() : Promise.resolve())
      .then(function () { return Promise.all([update(), updateRun()]); });
    steps.then(recovered, function (e) { failed("Update failed (" + e.message + "); retrying."); })
      .then(function () {
        charts.forEach(function (c) { c.plot.redraw(false, false); });
        setTimeout(tick, Math.max(0, intervalMs - (Date.now() - started)));
      });
  }

  let resizeTimer = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      charts.forEach(function (c) { c.plot.setSize({width: width(c.el), height: 200}); });
    }, 150);
  });

  tick();
})();
