// Offline search over the error index (window.KVERR_INDEX, loaded by <script src>).
// A pasted log line is first tried against each record's messagePattern, so values like
// "got 48" still find "got {self.page_size}"; otherwise words are matched. The query can come
// from the URL (index.html?q=...), which is how other pages' search boxes and tests drive it.
(function () {
  "use strict";
  var index = window.KVERR_INDEX || [];
  var list = document.getElementById("errors");
  var box = document.getElementById("q");
  var status = document.getElementById("search-status");
  if (!list || !box) return;
  var rows = {};
  Array.prototype.forEach.call(list.children, function (li) { rows[li.getAttribute("data-id")] = li; });
  var order = Array.prototype.slice.call(list.children);

  // Python's whitespace, which a log line is searched with folded (kverr/pattern.py makes this line)
  var BLANKS = /[\u0009\u000a\u000b\u000c\u000d\u001c\u001d\u001e\u001f\u0020\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000]+/g;
  function foldSpace(text) { return text.replace(BLANKS, " ").replace(/^ | $/g, ""); }
  index.forEach(function (e) {
    // e.p is already in JavaScript's syntax (kverr.pattern.js_source)
    try { e.re = e.p ? new RegExp(e.p) : null; } catch (err) { e.re = null; }
    e.hay = (e.m + " " + e.f.join(" ") + " " + e.t.join(" ") + " " + e.id).toLowerCase();
  });

  function words(text) { return (text.toLowerCase().match(/[a-z0-9_][a-z0-9_.-]*/g) || []); }

  function score(e, q, qw) {
    // A pattern hit outranks words; among hits, the one with more fixed text is more specific.
    if (e.re && q.length <= 20000 && e.re.test(q)) return 2 + Math.min(e.l, 500) / 1000;
    if (!qw.length) return 0;
    var hits = 0;
    qw.forEach(function (w) { if (e.hay.indexOf(w) >= 0) hits++; });
    var frac = hits / qw.length;
    // Few words: all must be present. A long paste: most of its words must be.
    if (qw.length <= 4) return frac === 1 ? frac : 0;
    return frac >= 0.6 ? frac : 0;
  }

  function run(q) {
    q = foldSpace(q);
    offerPages(q);
    list.querySelectorAll(".best").forEach(function (li) { li.classList.remove("best"); });
    if (!q) {
      order.forEach(function (li) { li.hidden = false; list.appendChild(li); });
      status.textContent = "";
      return;
    }
    var qw = words(q).filter(function (w) { return w.length > 1; });
    var found = [];
    index.forEach(function (e) {
      var s = score(e, q, qw);
      if (s > 0) found.push({ e: e, s: s });
    });
    found.sort(function (a, b) { return b.s - a.s || a.e.m.length - b.e.m.length; });
    order.forEach(function (li) { li.hidden = true; });
    found.forEach(function (f, i) {
      var li = rows[f.e.id];
      if (!li) return;
      li.hidden = false;
      li.setAttribute("data-rank", String(i + 1));
      if (i === 0 && f.s >= 2) li.classList.add("best");
      list.appendChild(li);
    });
    var exact = found.filter(function (f) { return f.s >= 2; }).length;
    status.textContent = found.length
      ? found.length + " matching error" + (found.length === 1 ? "" : "s") + (exact ? " (" + exact + " exact match" + (exact === 1 ? "" : "es") + ")" : "")
      : "No error matches. Try fewer words, or just the flag name.";
  }

  // Flag and release pages whose name the query names: `--page-size`, `page size`, `0.5.9`.
  var pages = window.KVERR_PAGES || [];
  var pageList = document.getElementById("page-hits");
  function norm(text) { return text.toLowerCase().replace(/^-+/, "").replace(/[\s_]+/g, "-"); }
  pages.forEach(function (p) { p.key = norm(p.n); });
  function offerPages(q) {
    if (!pageList) return;
    pageList.textContent = "";
    var key = norm(q.trim());
    var release = key.replace(/^v(?=\d)/, "");
    var named = {};  // flags written out in a pasted line: "ValueError: --page-size must ..."
    (q.match(/--[A-Za-z0-9][A-Za-z0-9_-]*/g) || []).forEach(function (f) { named[f.toLowerCase()] = true; });
    var hits = key.length < 2 ? [] : pages.filter(function (p) {
      if (p.k === "release") {
        var name = p.key.replace(/^v(?=\d)/, "");
        return name === release || (/^\d/.test(release) && release.length >= 3 && name.indexOf(release) === 0);
      }
      return p.key === key || named[p.n] || (key.length >= 4 && p.key.indexOf(key) === 0);
    }).slice(0, 8);
    hits.forEach(function (p) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = p.u;
      var kind = document.createElement("span");
      kind.className = "kind";
      kind.textContent = p.k === "flag" ? "Flag" : "Release";
      var name = document.createElement("code");
      name.textContent = p.n;
      var count = document.createElement("span");
      count.className = "count";
      count.textContent = p.c + " error" + (p.c === 1 ? "" : "s");
      a.appendChild(kind); a.appendChild(name); a.appendChild(count);
      li.appendChild(a);
      pageList.appendChild(li);
    });
    pageList.hidden = hits.length === 0;
  }

  var timer = null;
  box.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { run(box.value); }, 80);
  });
  var initial = new URLSearchParams(window.location.search).get("q");
  if (initial) { box.value = initial; }
  run(box.value);
})();
