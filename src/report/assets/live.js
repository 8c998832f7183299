// kforge serve's live page: long-polls /api/status (the server answers as soon as something
// changed, else after two seconds) and redraws the tables of runs and benches. Each run's row
// keeps the attempt numbers it has shown, in data-attempts-seen="3 4 5", and <body
// data-updates> counts the answers: the CI test reads them to see the counter move.
// `?polls=N` stops after N answers: headless Chromium's virtual time can hang when its budget
// runs out while a long poll is pending, so the test lets the page go quiet instead.
(function () {
  var version = "", seen = {}, updates = 0;
  var maxPolls = Number(new URLSearchParams(window.location.search).get("polls")) || Infinity;

  function cell(tr, text, href) {
    var td = document.createElement("td");
    if (href) {
      var a = document.createElement("a");
      a.href = href;
      a.textContent = text;
      td.appendChild(a);
    } else {
      td.textContent = text;
    }
    tr.appendChild(td);
  }

  function num(x, digits) { return x > 0 ? x.toFixed(digits) : "-"; }

  function clear(id) {
    var body = document.querySelector("#" + id + " tbody");
    while (body.firstChild) body.removeChild(body.firstChild);
    return body;
  }

  function renderRuns(runs) {
    var body = clear("runs");
    runs.forEach(function (r) {
      var list = seen[r.id] = seen[r.id] || [];
      if (list[list.length - 1] !== r.attempt) list.push(r.attempt);
      var tr = document.createElement("tr");
      tr.setAttribute("data-run", r.id);
      tr.setAttribute("data-attempts-seen", list.join(" "));
      cell(tr, String(r.id));
      [r.problem, r.backend, r.model].forEach(function (t) { cell(tr, t); });
      cell(tr, r.status === "running" ? "running" : r.status + ": " + r.stop_reason);
      cell(tr, r.phase ? r.phase + " (iteration " + r.iteration + (r.iterations ? " of " + r.iterations : "") + ")" : "-");
      cell(tr, r.attempt ? r.attempt + (r.state && r.state !== "done" ? " " + r.state : "") : "-");
      cell(tr, r.correct + " of " + r.attempts);
      cell(tr, num(r.best_ms, 4));
      cell(tr, num(r.speedup, 2));
      cell(tr, num(r.sol, 1));
      cell(tr, r.tokens > 0 ? String(r.tokens) : "-");
      cell(tr, num(r.cost_usd, 4));
      cell(tr, num(r.wall_seconds, 1));
      cell(tr, r.seconds_left >= 0 ? r.seconds_left.toFixed(0) + " s" : "no limit");
      cell(tr, "report", r.report);
      body.appendChild(tr);
    });
  }

  function renderBenches(benches) {
    var body = clear("benches");
    benches.forEach(function (b) {
      var tr = document.createElement("tr");
      [b.file, b.suite, b.backend, String(b.problems), String(b.correct)].forEach(function (t) { cell(tr, t); });
      cell(tr, (100 * b.share_correct).toFixed(0) + "%");
      cell(tr, num(b.wall_seconds, 1));
      cell(tr, "report", b.report);
      body.appendChild(tr);
    });
  }

  function state(text) { document.getElementById("live-state").textContent = text; }

  function poll() {
    fetch("/api/status?since=" + encodeURIComponent(version), {cache: "no-store"})
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (s) {
        version = s.version;
        renderRuns(s.runs);
        renderBenches(s.benches);
        document.body.setAttribute("data-updates", String(++updates));
        state("live: " + s.runs.length + " runs, " + s.benches.length + " benches; updated " + new Date().toLocaleTimeString() +
              (updates >= maxPolls ? "; stopped after " + updates + " updates (?polls)" : ""));
        if (updates < maxPolls) setTimeout(poll, 1000);
      })
      .catch(function (e) {
        state("the server does not answer (" + e.message + "); trying again");
        setTimeout(poll, 3000);
      });
  }

  poll();
})();
