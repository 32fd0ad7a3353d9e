// Draws the run report from the JSON inlined in the page (no request leaves the file).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var rep = data.report, tl = data.timeline || {series: []};
  var phases = rep.phases || [];
  function fmt(v, d) { return v == null ? "" : (+v).toFixed(d == null ? 1 : d); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text != null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  var width = Math.min(1100, document.body.clientWidth - 20);
  // Value axes start at 0, so noise on a flat line does not look like a knee (zooming in with
  // the mouse still narrows them).
  function fromZero(u, min, max) { return [Math.min(0, min), max > 0 ? max * 1.05 : 1]; }

  // Header.
  var run = rep.run || {};
  document.getElementById("title").textContent = "Run report: " + (run.name || run.id || rep.input || "");
  var summary = document.getElementById("summary");
  var lines = [];
  if (run.id) lines.push("run " + run.id + " (" + (run.status || "") + ")");
  var knee = rep.knee || {};
  lines.push(knee.phase != null ? "Throughput knee: " + knee.phase + " at " + knee.users + " users, " +
             fmt(knee.rps) + " req/s (Kneedle, sensitivity " + knee.sensitivity + ")"
                                : "Throughput knee: " + (knee.reason || "none"));
  var lk = rep.latency_knee || {};
  lines.push(lk.phase != null ? "Latency knee: " + lk.phase + " at " + lk.users + " users"
                              : "Latency knee: " + (lk.reason || "none"));
  var usl = rep.usl || {};
  lines.push(usl.fitted ? "USL: alpha " + (+usl.alpha).toPrecision(3) + ", beta " + (+usl.beta).toPrecision(3) +
             ", gamma " + fmt(usl.gamma, 2) + ", R\u00b2 " + fmt(usl.r_squared, 3) +
             (usl.peak_users != null ? ", peak at " + fmt(usl.peak_users) + " users" : "") +
             (usl.peak_rps != null ? ", " + fmt(usl.peak_rps) + " req/s" : "")
                        : "USL: " + (usl.reason || "not fitted"));
  var bn = rep.bottleneck || {};
  lines.push("Saturated first: " + (bn.summary || bn.reason || "not assessed"));
  lines.forEach(function (l) { summary.appendChild(el("li", l)); });

  // Scaling chart: throughput and latency against users, the USL curve and the knee.
  var pts = phases.filter(function (p) { return p.users > 0 && p.rps != null; })
                  .sort(function (a, b) { return a.users - b.users; });
  var seen = {}, xs = [];
  pts.forEach(function (p) { if (!seen[p.users]) { seen[p.users] = 1; xs.push(p.users); } });
  var byUsers = {};
  pts.forEach(function (p) { if (!(p.users in byUsers)) byUsers[p.users] = p; });
  function uslAt(n) { return usl.gamma * n / (1 + usl.alpha * (n - 1) + usl.beta * n * (n - 1)); }
  if (usl.fitted && xs.length) {
    var maxX = xs[xs.length - 1], step = Math.max(maxX / 60, 1e-9);
    for (var n = 1; n <= maxX; n += step) if (!seen[n]) { seen[n] = 1; xs.push(n); }
    xs.sort(function (a, b) { return a - b; });
  }
  function col(f) { return xs.map(function (u) { var p = byUsers[u]; return p ? f(p) : null; }); }
  var ms = function (k) { return col(function (p) { return p[k] == null ? null : p[k] * 1000; }); };
  var scaleData = [xs, col(function (p) { return p.rps; }),
                   xs.map(function (u) { return usl.fitted ? uslAt(u) : null; }),
                   ms("p50_seconds"), ms("p95_seconds"), ms("p99_seconds")];
  var dots = {show: true, size: 7};
  var kneeUsers = knee.users;
  var charts = window.loadwatchCharts = {};  // the drawn charts, for tests and the console
  charts.scaling = new uPlot({
    title: "Throughput and latency against users", width: width, height: 360,
    scales: {x: {time: false}, rps: {range: fromZero}, ms: {range: fromZero}},
    series: [
      {label: "users"},
      {label: "req/s", stroke: "#1f77b4", width: 2, points: dots, spanGaps: true, scale: "rps"},
      {label: "USL fit", stroke: "#9467bd", dash: [6, 4], width: 1.5, points: {show: false}, scale: "rps",
       spanGaps: true},
      {label: "p50 ms", stroke: "#2ca02c", points: dots, spanGaps: true, scale: "ms"},
      {label: "p95 ms", stroke: "#ff7f0e", points: dots, spanGaps: true, scale: "ms"},
      {label: "p99 ms", stroke: "#d62728", points: dots, spanGaps: true, scale: "ms"}],
    axes: [{label: "users"}, {scale: "rps", label: "req/s"},
           {scale: "ms", side: 1, label: "latency ms", grid: {show: false}}],
    hooks: {draw: [function (u) {
      if (kneeUsers == null) return;
      var x = u.valToPos(kneeUsers, "x", true), ctx = u.ctx;
      ctx.save();
      ctx.strokeStyle = "#e00"; ctx.lineWidth = 2; ctx.setLineDash([4, 3]);
      ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
      ctx.fillStyle = "#e00"; ctx.font = "bold " + Math.round(12 * devicePixelRatio) + "px sans-serif";
      ctx.fillText("knee: " + kneeUsers + " users", x + 6, u.bbox.top + 16 * devicePixelRatio);
      ctx.restore();
    }]}
  }, scaleData, document.getElementById("scaling"));
  document.getElementById("scaling").setAttribute("data-knee-users", kneeUsers == null ? "" : kneeUsers);

  // Per-phase table.
  var table = document.getElementById("phases");
  // Every figure with its bound; a missing req/s shows its reason, never a number.
  var head = ["phase", "users", "stable s", "req/s", "req/s \u00b1 %", "p50 ms", "p95 ms", "p95 bound ms", "p99 ms",
              "errors %", "target CPU cores", "host CPU busy"];
  var latency = phases.filter(function (p) { return p.latency_window; })[0];
  if (latency) lines.push("Latency: " + latency.latency_window);
  (rep.left_out_of_scaling || []).forEach(function (l) { lines.push("Left out of the knee and the fit: " + l); });
  summary.textContent = "";
  lines.forEach(function (l) { summary.appendChild(el("li", l)); });
  var rows = phases.map(function (p, i) {
    var cpu = (p.targets || []).map(function (t) {
      return t.name + " " + fmt(t.cpu_cores, 2) + (t.busiest_process_core_share != null ?
             " (busiest " + fmt(t.busiest_process_core_share, 2) + ")" : "");
    }).join(", ");
    var busy = null, modes = (p.host || {}).cpu_cores_by_mode || {};
    Object.keys(modes).forEach(function (m) { if (m !== "idle" && m !== "iowait") busy = (busy || 0) + modes[m]; });
    var ms = function (v) { return v == null ? null : v * 1000; };
    var pm = p.rps && p.rps_low != null && p.rps_high != null ? (p.rps_high - p.rps_low) / 2 / p.rps * 100 : null;
    var bound = p.p95_low_seconds != null && p.p95_high_seconds != null ?
        fmt(ms(p.p95_low_seconds)) + "\u2013" + fmt(ms(p.p95_high_seconds)) : null;
    return [p.name + (i === knee.phase_index ? " \u25c0 knee" : ""), p.users, fmt(p.stable_seconds, 0),
     p.rps != null ? fmt(p.rps) : (p.rps_unavailable ? "unavailable: " + p.rps_unavailable : null),
     pm == null ? null : "\u00b1" + fmt(pm), fmt(ms(p.p50_seconds)), fmt(ms(p.p95_seconds)), bound,
     fmt(ms(p.p99_seconds)),
     fmt(p.error_ratio == null ? null : p.error_ratio * 100, 2), cpu, fmt(busy, 2)]
      .map(function (c) { return c == null ? "" : String(c); });
  });
  // A column no phase has a figure for is left out, not shown blank.
  var keep = head.map(function (h, c) { return c < 2 || rows.some(function (r) { return r[c] !== ""; }); });
  var tr = el("tr");
  head.forEach(function (h, c) { if (keep[c]) tr.appendChild(el("th", h)); });
  table.appendChild(tr);
  rows.forEach(function (cells, i) {
    var r = el("tr", null, i === knee.phase_index ? "knee" : "");
    cells.forEach(function (c, k) { if (keep[k]) r.appendChild(el("td", c)); });
    table.appendChild(r);
  });
  if (bn.summary) document.getElementById("saturated").textContent = "Saturated first at " + (bn.phase || "the knee") +
    ": " + bn.summary;

  // Time series with phase bands.
  var series = tl.series || [];
  if (series.length) {
    var tables = series.map(function (s) { return [s.t, s.v]; });
    var joined = uPlot.join(tables);
    var colors = ["#1f77b4", "#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b", "#e377c2"];
    // Every unit gets its own labelled axis from 0: a 0.6-core line is not drawn on the req/s
    // scale. The first unit's axis is on the left, the others on the right.
    var units = [], scales = {};
    series.forEach(function (s) {
      if (units.indexOf(s.unit) < 0) { units.push(s.unit); scales[s.unit] = {range: fromZero}; }
    });
    var axes = [{}].concat(units.map(function (unit, i) {
      return {scale: unit, label: unit, side: i === 0 ? 3 : 1, grid: {show: i === 0}};
    }));
    var opts = {
      title: "The run over time", width: width, height: 320, scales: scales,
      series: [{}].concat(series.map(function (s, i) {
        return {label: s.name + " (" + s.unit + ")", stroke: colors[i % colors.length], width: 1.5,
                scale: s.unit, spanGaps: false};
      })),
      axes: axes,
      hooks: {drawClear: [function (u) {
        var ctx = u.ctx;
        ctx.save();
        phases.forEach(function (p, i) {
          var x0 = u.valToPos(p.start, "x", true), x1 = u.valToPos(p.end, "x", true);
          ctx.fillStyle = i % 2 ? "rgba(31,119,180,0.04)" : "rgba(31,119,180,0.09)";
          ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
          // The stable window, where the phase's figures come from, shaded darker.
          if (p.stable_start != null) {
            var xs0 = u.valToPos(Math.max(p.start, p.stable_start), "x", true);
            ctx.fillStyle = "rgba(31,119,180,0.16)";
            ctx.fillRect(xs0, u.bbox.top, x1 - xs0, u.bbox.height);
          }
          ctx.fillStyle = "#555"; ctx.font = Math.round(11 * devicePixelRatio) + "px sans-serif";
          ctx.fillText(p.users != null ? p.users + "u" : p.name, x0 + 3, u.bbox.top + 12 * devicePixelRatio);
        });
        ctx.restore();
      }]}
    };
    charts.timeline = new uPlot(opts, joined, document.getElementById("timeline"));
  } else {
    // No time series (a report from a CSV of steps): no empty section.
    var section = document.getElementById("timeline-section");
    section.parentNode.removeChild(section);
  }
  document.body.setAttribute("data-drawn", "1");
})();
