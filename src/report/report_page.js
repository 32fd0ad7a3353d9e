// Draws the run report's charts from the JSON inlined in the page (no request leaves the file).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var rep = data.report, tl = data.timeline || {series: []};
  var phases = rep.phases || [];
  var width = Math.min(1100, document.body.clientWidth - 20);
  // Value axes start at 0, so noise on a flat line does not look like a knee (zooming in with
  // the mouse still narrows them).
  function fromZero(u, min, max) { return [Math.min(0, min), max > 0 ? max * 1.05 : 1]; }

  // The sentences and tables are in the page already (written by loadwatch, once, in C++);
  // this script only draws the charts from the figures.
  var knee = rep.knee || {}, usl = rep.usl || {};

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
