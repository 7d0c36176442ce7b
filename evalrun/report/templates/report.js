(function () {
  "use strict";
  var problems = [];
  window.addEventListener("error", function (e) { problems.push("uncaught: " + e.message); });
  document.addEventListener("securitypolicyviolation", function (e) {
    problems.push("blocked load: " + e.blockedURI); });
  function all(selector, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(selector));
  }
  function key(td, num) {
    var v = td ? td.getAttribute("data-v") : null;
    if (v === null || v === "") return null;
    return num ? parseFloat(v) : v.toLowerCase();
  }
  function sortBy(th) {
    var table = th.closest("table"), cells = th.parentNode.cells;
    var idx = Array.prototype.indexOf.call(cells, th), num = th.dataset.type === "num";
    var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    Array.prototype.forEach.call(cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    var sign = dir === "ascending" ? 1 : -1, body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[idx], num), y = key(b.cells[idx], num);
      if (x === null || y === null) return (x === null) - (y === null);
      return x < y ? -sign : x > y ? sign : 0;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  all("table.sortable th").forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(th); } });
  });
  function reveal(id) {
    var el = id && document.getElementById(id);
    for (var p = el; p; p = p.parentElement) { if (p.tagName === "DETAILS") p.open = true; }
    if (el) el.scrollIntoView();
  }
  window.addEventListener("hashchange", function () {
    reveal(decodeURIComponent(location.hash.slice(1))); });
  if (location.hash) reveal(decodeURIComponent(location.hash.slice(1)));

  // Failures only, and a text filter: over the task table's rows and the samples' drill-downs.
  var onlyBox = document.getElementById("failures-only");
  var textBox = document.getElementById("filter-text");
  var shownNote = document.getElementById("filter-count");
  var OPEN_CAP = 50;
  function has(el, q) { return !q || (el.getAttribute("data-text") || "").indexOf(q) >= 0; }
  function applyFilters(opening) {
    var only = !!(onlyBox && onlyBox.checked);
    var q = ((textBox && textBox.value) || "").trim().toLowerCase();
    var shownTasks = 0, opened = 0;
    all("[data-task]").forEach(function (el) {
      var failing = el.getAttribute("data-failing") === "1";
      var show = (!only || failing) && has(el, q);
      el.classList.toggle("hide", !show);
      if (el.tagName === "TR" && show) shownTasks += 1;
      if (el.tagName !== "DETAILS") return;
      var own = !q || (el.getAttribute("data-own") || "").indexOf(q) >= 0;
      all("details.sample", el).forEach(function (s) {
        var bad = s.getAttribute("data-outcome") !== "pass";
        var visible = (!only || bad) && (own || has(s, q));
        s.classList.toggle("hide", !visible);
        if (opening && only && show && bad && opened < OPEN_CAP) {
          el.open = true; s.open = true; opened += 1;
        }
      });
    });
    if (shownNote) {
      var total = all("tr[data-task]").length;
      shownNote.textContent = (only || q) ? "showing " + shownTasks + " of " + total + " tasks" : "";
    }
  }
  if (onlyBox) onlyBox.addEventListener("change", function () { applyFilters(true); });
  if (textBox) textBox.addEventListener("input", function () { applyFilters(false); });

  // evalrun view: the trend's metric, a filter over the runs, two runs picked to open their diff.
  var metric = document.getElementById("trend-metric");
  if (metric) metric.addEventListener("change", function () {
    all(".trend").forEach(function (t) {
      t.classList.toggle("hide", t.getAttribute("data-metric") !== metric.value); });
  });
  var runsBox = document.getElementById("filter-runs");
  if (runsBox) runsBox.addEventListener("input", function () {
    var q = runsBox.value.trim().toLowerCase();
    all("#runs tbody tr").forEach(function (r) { r.classList.toggle("hide", !has(r, q)); });
  });
  var compare = document.getElementById("compare"), picked = [];
  function pickedPair() {  // [older, newer] keys of the two picked runs
    var rows = picked.slice().sort(function (x, y) {
      return parseFloat(x.getAttribute("data-started") || "0") -
        parseFloat(y.getAttribute("data-started") || "0"); });
    return rows.map(function (r) { return r.getAttribute("data-key"); });
  }
  function diffHref(pair) {
    var pairs = compare.getAttribute("data-pairs");
    if (pairs) return JSON.parse(pairs)[pair[0] + "\n" + pair[1]] || null;
    return compare.getAttribute("data-diff") + "?a=" + encodeURIComponent(pair[0]) +
      "&b=" + encodeURIComponent(pair[1]);
  }
  function showPicked() {
    var button = document.getElementById("open-diff");
    var note = document.getElementById("compare-note");
    all("#runs tbody tr").forEach(function (r) {
      r.classList.toggle("picked", picked.indexOf(r) >= 0); });
    var pair = pickedPair(), href = pair.length === 2 ? diffHref(pair) : null;
    button.disabled = !href;
    if (pair.length < 2) note.textContent = "select " + (2 - pair.length) + " more";
    else if (href) note.textContent = "a " + pair[0] + " \u2192 b " + pair[1];
    else note.textContent = "this copy holds each run's diff with the previous run of its " +
      "suite; for these two: evalrun diff " + pair[0] + " " + pair[1] + " --html diff.html";
  }
  all("#runs input.pick").forEach(function (box) {
    box.addEventListener("change", function () {
      var row = box.closest("tr");
      picked = picked.filter(function (r) { return r !== row; });
      if (box.checked) picked.push(row);
      while (picked.length > 2) picked.shift().querySelector("input.pick").checked = false;
      showPicked();
    });
  });
  if (compare) document.getElementById("open-diff").addEventListener("click", function () {
    var pair = pickedPair(), href = pair.length === 2 ? diffHref(pair) : null;
    if (href) location.href = href;
  });

  function visible(el) {  // laid out, and no closed <details> or hidden element around it
    if (!el || el.getBoundingClientRect().height <= 0) return false;
    for (var p = el.parentElement; p; p = p.parentElement) {
      if (p.tagName === "DETAILS" && !p.open) return false;
      if (p.classList.contains("hide")) return false;
    }
    return true;
  }
  function selftest() {
    var lines = [], ok = true;
    function check(name, cond) { lines.push((cond ? "ok   " : "FAIL ") + name); ok = ok && !!cond; }
    var table = document.querySelector("table.sortable");
    check("a sortable table", table);
    var th = table && table.querySelector("th[data-type=num]");
    if (th) {
      var idx = Array.prototype.indexOf.call(th.parentNode.cells, th);
      var column = function () {
        return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
          return key(r.cells[idx], true); }).filter(function (v) { return v !== null; });
      };
      th.click(); var up = column();
      th.click(); var down = column();
      check("click sorts '" + th.textContent + "' ascending " + JSON.stringify(up),
        up.every(function (v, i) { return i === 0 || up[i - 1] <= v; }));
      check("second click sorts descending " + JSON.stringify(down),
        down.every(function (v, i) { return i === 0 || down[i - 1] >= v; }));
    }
    var sample = document.querySelector("details.sample");
    if (sample) {
      reveal(sample.id); sample.open = false;
      sample.querySelector("summary").click();
      var body = sample.querySelector(".sample-body");
      check("drill-down " + sample.id + " opens",
        sample.open && body && body.getBoundingClientRect().height > 0);
    }
    if (textBox && onlyBox) {
      var rows = all("tr[data-task]");
      var first = rows[0].getAttribute("data-id");
      textBox.value = first; textBox.dispatchEvent(new Event("input"));
      var left = rows.filter(function (r) { return !r.classList.contains("hide"); });
      check("text filter '" + first + "' keeps " + left.length + " of " + rows.length + " rows",
        left.length >= 1 && left.every(function (r) { return has(r, first.toLowerCase()); }));
      textBox.value = ""; textBox.dispatchEvent(new Event("input"));
      all("details.task, details.sample").forEach(function (d) { d.open = false; });
      onlyBox.click();
      var kept = rows.filter(function (r) { return !r.classList.contains("hide"); });
      check("failures only keeps " + kept.length + " failing rows of " + rows.length,
        kept.every(function (r) { return r.getAttribute("data-failing") === "1"; }));
      var failing = all("details.sample[data-outcome=fail]:not(.hide)");
      var failed = failing.filter(function (s) { return s.querySelector(".changes pre"); })[0] ||
        failing[0];
      if (failed) {
        var task = failed.closest("details.task");
        check("failing sample " + failed.id + " is open", failed.open && task.open);
        check("its task's prompt is visible", visible(task.querySelector(".prompt pre")));
        check("its reason is visible", visible(failed.querySelector(".why pre")));
        check("its workspace diff is visible", visible(failed.querySelector(".changes pre")));
        check("passing samples are hidden", all("details.sample[data-outcome=pass]").every(
          function (s) { return !visible(s); }));
      }
    }
    var width = document.documentElement.scrollWidth;
    lines.push("scrollWidth " + width + " innerWidth " + window.innerWidth);
    lines.push("tables " + all("table").length +
      ", rows " + all("tbody tr").length +
      ", plots " + all("svg.plot").length +
      ", samples " + all("details.sample").length);
    check("no script error and no blocked load", problems.length === 0);
    lines = lines.concat(problems);
    document.getElementById("selftest").textContent =
      (ok ? "SELFTEST PASS" : "SELFTEST FAIL") + "\n" + lines.join("\n");
    window.scrollTo(0, 0);
  }
  if (new URLSearchParams(location.search).get("selftest") === "1") {
    window.addEventListener("load", function () { setTimeout(selftest, 50); });
  }
})();
