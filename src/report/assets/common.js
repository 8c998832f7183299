// Shared by every kforge report page; inlined after Chart.js and highlight.js. Draws the charts
// from the JSON in #kforge-data and records on <body> what was drawn, for readers and for the
// browser test (tests/report_browser_test.sh):
//   data-charts="speedup:7 roofline:7"   the points (or bars) each chart drew
//   data-charts-ready="yes"              Chart.js ran and every chart drew at least one; else "no"
// Text from the data reaches the page only through textContent or a canvas, never as markup.
"use strict";
var kforge = (function () {
  var drawn = {};
  var palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

  function data() {
    return JSON.parse(document.getElementById("kforge-data").textContent);
  }

  // A line of text under a chart (why it is empty, what it leaves out).
  function note(canvasId, text) {
    var p = document.createElement("p");
    p.className = "note";
    p.textContent = text;
    document.getElementById(canvasId).parentNode.after(p);
  }

  // Draws `config` into canvas `canvasId`; `points` is how many data points it shows.
  function chart(canvasId, config, points, emptyText) {
    drawn[canvasId.replace(/^chart-/, "")] = points;
    if (typeof Chart === "undefined") {
      note(canvasId, "Chart.js did not load: no chart.");
      return;
    }
    config.options = config.options || {};
    config.options.animation = false;  // drawn at once: screenshots and tests see the final chart
    config.options.responsive = true;
    config.options.maintainAspectRatio = false;
    new Chart(document.getElementById(canvasId), config);
    if (points === 0) note(canvasId, emptyText || "Nothing to plot.");
  }

  function finish() {
    var names = Object.keys(drawn);
    document.body.setAttribute("data-charts", names.map(function (n) { return n + ":" + drawn[n]; }).join(" "));
    var ready = typeof Chart !== "undefined" && names.length > 0 &&
                names.every(function (n) { return drawn[n] > 0; });
    document.body.setAttribute("data-charts-ready", ready ? "yes" : "no");
  }

  // Sources are escaped text in <code class="language-X">; highlight.js re-renders that text.
  function highlight() {
    if (typeof hljs === "undefined") return;
    // Debian 12 ships highlight.js 9.18, which logs an end-of-life notice on first use; Debian
    // maintains that package, and a report's console is kept silent so a real error stands out.
    // (Later versions ignore the option.)
    hljs.configure({hideUpgradeWarningAcceptNoSupportOrSecurityUpdates: true});
    var blocks = document.querySelectorAll("pre code[class^='language-']");
    var highlightOne = hljs.highlightElement || hljs.highlightBlock;  // highlight.js 11 / 9
    for (var i = 0; i < blocks.length; i++) highlightOne.call(hljs, blocks[i]);
  }

  function axisTitle(text) {
    return {display: true, text: text};
  }

  return {data: data, chart: chart, finish: finish, highlight: highlight, palette: palette, axisTitle: axisTitle};
})();
