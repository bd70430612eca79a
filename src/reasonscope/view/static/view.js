// reasonscope view: sort and filter the Runs table. It only moves and hides existing rows and sets one
// count; it never writes text taken from the page or the server into the document.
(function () {
  "use strict";
  var table = document.getElementById("runs");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var inputs = Array.prototype.slice.call(document.querySelectorAll("[data-filter]"));
  var count = document.getElementById("shown-count");

  function matches(row) {
    return inputs.every(function (input) {
      var wanted = input.value.trim().toLowerCase();
      if (!wanted) { return true; }
      var kind = input.getAttribute("data-filter");
      var date = row.getAttribute("data-date") || "";
      if (kind === "since") { return date >= input.value; }
      if (kind === "until") { return date !== "" && date <= input.value; }
      var values = (row.getAttribute("data-" + kind) || "").toLowerCase().split("|");
      return values.some(function (v) { return v.indexOf(wanted) >= 0; });
    });
  }

  function apply() {
    var shown = 0;
    rows.forEach(function (row) {
      var keep = matches(row);
      row.hidden = !keep;
      if (keep) { shown += 1; }
    });
    if (count) { count.textContent = String(shown); }
  }

  inputs.forEach(function (input) { input.addEventListener("input", apply); input.addEventListener("change", apply); });

  Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (th) {
    th.addEventListener("click", function () {
      var key = "data-" + th.getAttribute("data-sort");
      var numeric = th.getAttribute("data-type") === "number";
      var descending = th.getAttribute("aria-sort") === "ascending";
      rows.sort(function (a, b) {
        var x = a.getAttribute(key) || "", y = b.getAttribute(key) || "";
        var c = numeric ? (parseFloat(x) || 0) - (parseFloat(y) || 0) : x.localeCompare(y);
        return descending ? -c : c;
      });
      Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  apply();
}());
