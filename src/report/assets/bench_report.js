// The bench report's charts (bench_html.h): the fast_p curve for p from 0 to 3 and the
// geometric-mean speedup per baseline, for each precision pass, and the share correct.
(function () {
  var d = kforge.data();
  var p = kforge.palette;
  var many = d.passes.length > 1;
  function label(pass, baseline) { return many ? baseline + " [" + pass.precision + "]" : baseline; }

  function fastPChart() {
    var datasets = [], points = 0, color = 0;
    d.passes.forEach(function (pass) {
      pass.baselines.forEach(function (b) {
        var curve = (pass.fast_p[b] || []).map(function (q) { return {x: q[0], y: q[1]}; });
        points += curve.length;
        var c = p[color++ % p.length];
        // Every other curve dashed: curves that coincide (fast_p against reference and seed
        // often do) stay both visible.
        datasets.push({label: label(pass, b), data: curve, showLine: true, stepped: "after", pointRadius: 0, borderColor: c,
                       backgroundColor: c, borderDash: color % 2 === 0 ? [7, 5] : [], borderWidth: 2});
      });
    });
    kforge.chart("chart-fastp", {
      type: "scatter",
      data: {datasets: datasets},
      options: {
        plugins: {title: {display: true, text: "fast_p: share correct and more than p times faster"}},
        scales: {
          x: {min: 0, max: 3, title: kforge.axisTitle("p (speedup threshold)")},
          y: {min: 0, max: 1, title: kforge.axisTitle("share of all problems")}
        }
      }
    }, points, "No problem was judged.");
  }

  function geomeanChart() {
    var baselines = [];
    d.passes.forEach(function (pass) {
      pass.baselines.forEach(function (b) { if (baselines.indexOf(b) < 0) baselines.push(b); });
    });
    var bars = 0;
    var datasets = d.passes.map(function (pass, i) {
      var values = baselines.map(function (b) {
        var v = pass.geomean_count[b] > 0 ? pass.geomean[b] : null;
        if (v) bars++;
        return v;
      });
      return {label: "[" + pass.precision + "]", data: values, backgroundColor: p[i % p.length]};
    });
    kforge.chart("chart-geomean", {
      type: "bar",
      data: {labels: baselines, datasets: datasets},
      options: {
        plugins: {title: {display: true, text: "Geometric-mean speedup per baseline (correct problems)"}},
        scales: {y: {beginAtZero: true, title: kforge.axisTitle("speedup (x)")}}
      }
    }, bars, "No correct problem had a baseline: no geometric mean.");
  }

  function correctChart() {
    kforge.chart("chart-correct", {
      type: "bar",
      data: {
        labels: d.passes.map(function (pass) { return "[" + pass.precision + "]"; }),
        datasets: [
          {label: "correct", data: d.passes.map(function (pass) { return pass.correct; }), backgroundColor: p[2]},
          {label: "not correct", data: d.passes.map(function (pass) { return pass.problems - pass.correct; }), backgroundColor: p[1]}
        ]
      },
      options: {
        plugins: {title: {display: true, text: "Share correct"}},
        scales: {x: {stacked: true}, y: {stacked: true, beginAtZero: true, title: kforge.axisTitle("problems")}}
      }
    }, d.passes.reduce(function (n, pass) { return n + pass.problems; }, 0), "The bench holds no problem.");
  }

  fastPChart();
  geomeanChart();
  correctChart();
  kforge.finish();
})();
