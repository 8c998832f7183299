// The run report's charts (run_report.h): speedup over the seed and SOL% by attempt, and the
// roofline with every timed attempt as a point under the theoretical and achievable peaks.
(function () {
  var d = kforge.data();
  var timed = d.attempts.filter(function (a) { return a.ms > 0; });

  function speedupChart() {
    var speedup = [], best = [], sol = [], failed = [], top = 0;
    timed.forEach(function (a) {
      if (a.speedup > 0) {
        speedup.push({x: a.number, y: a.speedup});
        top = Math.max(top, a.speedup);
        best.push({x: a.number, y: top});
      }
      sol.push({x: a.number, y: a.sol});
    });
    d.attempts.forEach(function (a) {
      if (a.status !== "" && a.status !== "correct") failed.push({x: a.number, y: 0});
    });
    var p = kforge.palette;
    kforge.chart("chart-speedup", {
      type: "scatter",
      data: {datasets: [
        {label: "speedup over the seed", data: speedup, backgroundColor: p[0], borderColor: p[0], pointRadius: 4},
        {label: "best so far (single runs)", data: best, showLine: true, stepped: true, borderColor: p[2], pointRadius: 0},
        {label: "SOL %", data: sol, yAxisID: "sol", backgroundColor: p[3], borderColor: p[3], pointStyle: "triangle", pointRadius: 4},
        {label: "not correct", data: failed, backgroundColor: p[1], borderColor: p[1], pointStyle: "crossRot", pointRadius: 6}
      ]},
      options: {
        plugins: {title: {display: true, text: "Speedup over the seed and SOL% by attempt"}},
        scales: {
          x: {title: kforge.axisTitle("attempt"), ticks: {stepSize: 1}},
          y: {title: kforge.axisTitle("speedup over the seed (x)"), beginAtZero: true},
          sol: {position: "right", title: kforge.axisTitle("SOL %"), beginAtZero: true, grid: {drawOnChartArea: false}}
        }
      }
    }, speedup.length + sol.length, "No attempt was timed.");
  }

  // y = min(peak, intensity x bandwidth), sampled on a log grid across [lo, hi].
  function roof(peaks, lo, hi) {
    var out = [];
    for (var i = 0; i <= 60; i++) {
      var x = lo * Math.pow(hi / lo, i / 60);
      out.push({x: x, y: Math.min(peaks.gflops, x * peaks.bandwidth_gbs)});
    }
    return out;
  }

  function rooflineChart() {
    var points = [], best = [];
    timed.forEach(function (a) {
      if (!(a.flops > 0 && a.bytes > 0)) return;
      var point = {x: a.flops / a.bytes, y: a.flops / (a.ms * 1e6), attempt: a.number};
      (a.number === d.best_attempt ? best : points).push(point);
    });
    var all = points.concat(best), p = kforge.palette, datasets = [];
    datasets.push({label: "attempts", data: points, backgroundColor: p[0], pointRadius: 4});
    datasets.push({label: "best", data: best, backgroundColor: p[1], pointRadius: 7, pointStyle: "star", borderColor: p[1]});
    if (d.roofs && all.length > 0) {
      var xs = all.map(function (q) { return q.x; });
      [d.roofs.theoretical, d.roofs.achievable].forEach(function (r) {
        if (r.gflops > 0 && r.bandwidth_gbs > 0) xs.push(r.gflops / r.bandwidth_gbs);  // the ridge point
      });
      var lo = Math.min.apply(null, xs) / 4, hi = Math.max.apply(null, xs) * 4;
      var t = d.roofs.theoretical, a = d.roofs.achievable;
      if (t.gflops > 0) datasets.push({label: "theoretical peak (" + t.unit + ")", data: roof(t, lo, hi), showLine: true, pointRadius: 0, borderColor: p[7], borderDash: [6, 4]});
      if (a.gflops > 0) datasets.push({label: "achievable peak (measured)", data: roof(a, lo, hi), showLine: true, pointRadius: 0, borderColor: p[2]});
    }
    kforge.chart("chart-roofline", {
      type: "scatter",
      data: {datasets: datasets},
      options: {
        plugins: {
          title: {display: true, text: "Roofline: every timed attempt"},
          tooltip: {callbacks: {label: function (c) {
            var q = c.raw;
            return q.attempt ? "attempt " + q.attempt + ": " + q.y.toPrecision(3) + " GFLOP/s at " + q.x.toPrecision(3) + " FLOP/byte" : c.dataset.label;
          }}}
        },
        scales: {
          x: {type: "logarithmic", title: kforge.axisTitle("arithmetic intensity (FLOP/byte)")},
          y: {type: "logarithmic", title: kforge.axisTitle("GFLOP/s")}
        }
      }
    }, all.length, "No timed attempt with counted FLOPs and bytes: no roofline point.");
  }

  speedupChart();
  rooflineChart();
  kforge.highlight();
  kforge.finish();
})();
