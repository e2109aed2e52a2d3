// otel-replay report: a virtualised span tree with a timeline, search and keyboard.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var spans = data.spans;
  var n = spans.length;
  var ROW = 22;
  var kids = [], tops = [], depth = new Int32Array(n), open = new Uint8Array(n);
  var hasMiss = new Uint8Array(n);
  var i, k;
  for (i = 0; i < n; i++) kids.push([]);
  for (i = 0; i < n; i++) {
    var p = spans[i].p;
    if (p >= 0 && p < i) { kids[p].push(i); depth[i] = depth[p] + 1; } else tops.push(i);
    if (spans[i].r === "miss" && p >= 0) hasMiss[p] = 1;
  }
  var end = 0, fork = -1;
  for (i = 0; i < n; i++) end = Math.max(end, spans[i].s + spans[i].d);
  end = end || 1;
  // a forked run: its first live call, marked on every row's timeline
  for (i = 0; i < n; i++) if (spans[i].fk && fork < 0) fork = i;
  var forkLine = fork < 0 ? "" : '<b class="fork-at" title="' + esc(spans[fork].fk) +
    '" style="left:' + (100 * spans[fork].s / end) + '%"></b>';
  // small runs open fully; large ones open their first levels
  for (i = 0; i < n; i++) open[i] = (n <= 2000 || depth[i] < 2) ? 1 : 0;
  // a miss is always in view: its ancestors open
  for (i = 0; i < n; i++) if (spans[i].r === "miss") openAncestors(i);

  var tree = document.getElementById("tree");
  var rowsEl = document.getElementById("rows");
  var detail = document.getElementById("detail");
  var search = document.getElementById("search");
  var countEl = document.getElementById("count");
  var rows = [], selected = -1, query = "", shown = null, hay = null;

  function openAncestors(j) {
    for (var q = spans[j].p; q >= 0; q = spans[q].p) open[q] = 1;
  }
  function text(j) {
    if (hay === null) hay = new Array(n);
    if (hay[j] === undefined) {
      var s = spans[j];
      hay[j] = (s.n + " " + (s.st || "") + " " + (s.e || "") + " " + (s.w || "") + " " +
        JSON.stringify(s.a) + " " + (s.q === undefined ? "" : JSON.stringify(s.q))).toLowerCase();
    }
    return hay[j];
  }
  function rebuild() {
    shown = null;
    if (query) {
      shown = new Uint8Array(n);
      for (var j = 0; j < n; j++) {
        if (text(j).indexOf(query) >= 0) {
          shown[j] = 2;
          for (var q = spans[j].p; q >= 0 && !shown[q]; q = spans[q].p) shown[q] = 1;
        }
      }
    }
    rows = [];
    var stack = tops.slice().reverse();
    while (stack.length) {
      var j = stack.pop();
      if (shown && !shown[j]) continue;
      rows.push(j);
      if (open[j] || shown) for (var c = kids[j].length - 1; c >= 0; c--) stack.push(kids[j][c]);
    }
    rowsEl.style.height = rows.length * ROW + "px";
    countEl.textContent = query ? countMatches() + " of " + n + " spans match" : n + " spans";
    render();
  }
  function countMatches() {
    var m = 0;
    for (var j = 0; j < n; j++) if (shown[j] === 2) m++;
    return m;
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }
  function ms(v) { return v >= 1000 ? (v / 1000).toFixed(2) + " s" : v.toFixed(1) + " ms"; }
  function badge(s) {
    var mark = s.fk ? '<span class="badge b-fork" title="' + esc(s.fk) + '">fork</span>' : "";
    if (s.st) return '<span class="badge b-' + s.st + '">' + s.st + "</span>" + mark;
    if (s.r === "tool" || s.r === "agent") return '<span class="badge b-' + s.r + '">' + s.r + "</span>";
    return "";
  }
  function render() {
    var top = tree.scrollTop, h = tree.clientHeight || 600;
    var first = Math.max(0, Math.floor(top / ROW) - 10);
    var last = Math.min(rows.length, Math.ceil((top + h) / ROW) + 10);
    var html = [];
    for (var r = first; r < last; r++) {
      var j = rows[r], s = spans[j];
      var tog = kids[j].length ? (open[j] || shown ? "▾" : "▸") : "";
      var cls = "row r-" + s.r + (j === selected ? " sel" : "") + (hasMiss[j] ? " has-miss" : "");
      var left = (100 * s.s / end), width = Math.max(0.2, 100 * s.d / end);
      html.push('<div class="' + cls + '" style="top:' + r * ROW + 'px" data-i="' + j +
        '" role="treeitem" aria-level="' + (depth[j] + 1) + '"><span class="name" style="padding-left:' +
        (4 + depth[j] * 14) + 'px"><span class="tog">' + tog + '</span><span class="label">' +
        esc(s.n) + "</span>" + badge(s) +
        '</span><span class="tl"><i style="left:' + left + "%;width:" + width + '%"></i>' + forkLine +
        "</span>" +
        '<span class="dur">' + ms(s.d) + "</span></div>");
    }
    rowsEl.innerHTML = html.join("");
  }
  function pretty(v) { return typeof v === "string" ? v : JSON.stringify(v, null, 2); }
  function show(j) {
    var s = spans[j], out = [];
    out.push("<h2>" + esc(s.n) + badge(s) + "</h2>");
    out.push("<p>" + esc(s.r) + " · " + ms(s.d) + " at +" + ms(s.s) +
      (s.svc ? " · " + esc(s.svc) : "") + (s.c !== undefined ? " · $" + s.c.toFixed(6) : "") + "</p>");
    if (s.e) out.push('<p class="why">' + esc(s.e) + "</p>");
    if (s.fk) out.push('<p class="fork">' + esc(s.fk) + "</p>");
    if (s.w) out.push('<h3>why</h3><pre class="why">' + esc(s.w) + "</pre>");
    if (s.q !== undefined) out.push('<details open class="request"><summary>request</summary><pre>' +
      esc(pretty(s.q)) + "</pre></details>");
    if (s.o !== undefined) out.push('<details open class="response"><summary>answer</summary><pre>' +
      esc(pretty(s.o)) + "</pre></details>");
    var rowsA = [];
    for (var key in s.a) rowsA.push("<tr><td>" + esc(key) + "</td><td>" + esc(pretty(s.a[key])) + "</td></tr>");
    rowsA.push("<tr><td>span id</td><td>" + esc(s.id) + "</td></tr>");
    out.push('<details class="attributes"><summary>attributes</summary><table>' + rowsA.join("") + "</table></details>");
    detail.innerHTML = out.join("");
  }
  function select(j, scroll) {
    selected = j;
    if (j >= 0) show(j);
    var r = rows.indexOf(j);
    if (scroll && r >= 0) {
      var top = r * ROW;
      if (top < tree.scrollTop) tree.scrollTop = top;
      else if (top + ROW > tree.scrollTop + tree.clientHeight) tree.scrollTop = top + ROW - tree.clientHeight;
    }
    render();
  }
  function toggle(j, state) {
    if (!kids[j].length) return;
    open[j] = state === undefined ? (open[j] ? 0 : 1) : state;
    rebuild();
  }
  function move(delta) {
    if (!rows.length) return;
    var r = rows.indexOf(selected);
    r = r < 0 ? 0 : Math.min(rows.length - 1, Math.max(0, r + delta));
    select(rows[r], true);
  }
  tree.addEventListener("scroll", render);
  window.addEventListener("resize", render);
  rowsEl.addEventListener("click", function (ev) {
    var el = ev.target.closest(".row");
    if (!el) return;
    var j = +el.getAttribute("data-i");
    if (ev.target.classList.contains("tog") || j === selected) toggle(j);
    select(j, false);
    tree.focus();
  });
  tree.addEventListener("keydown", function (ev) {
    var key = ev.key;
    if (key === "ArrowDown" || key === "j") move(1);
    else if (key === "ArrowUp" || key === "k") move(-1);
    else if (key === "PageDown") move(Math.floor(tree.clientHeight / ROW));
    else if (key === "PageUp") move(-Math.floor(tree.clientHeight / ROW));
    else if (key === "Home") move(-n);
    else if (key === "End") move(n);
    else if (selected >= 0 && (key === "ArrowRight" || key === "l")) toggle(selected, 1);
    else if (selected >= 0 && (key === "ArrowLeft" || key === "h")) {
      if (open[selected] && kids[selected].length) toggle(selected, 0);
      else if (spans[selected].p >= 0) select(spans[selected].p, true);
    } else if (selected >= 0 && key === "Enter") toggle(selected);
    else return;
    ev.preventDefault();
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "/" && document.activeElement !== search) { search.focus(); ev.preventDefault(); }
    else if (ev.key === "Escape") { search.value = ""; query = ""; rebuild(); tree.focus(); }
  });
  var timer = 0;
  search.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { query = search.value.trim().toLowerCase(); rebuild(); }, 120);
  });
  search.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" || ev.key === "ArrowDown") { tree.focus(); move(1); ev.preventDefault(); }
  });
  function bulk(state) { for (var j = 0; j < n; j++) open[j] = state; rebuild(); }
  document.getElementById("expand-all").addEventListener("click", function () { bulk(1); });
  document.getElementById("collapse-all").addEventListener("click", function () { bulk(0); });
  rebuild();
  // a link to a span (#span=ID) selects it; else the first miss, if any
  var want = (location.hash.match(/span=([0-9a-f]+)/) || [])[1];
  for (k = 0; k < n; k++) {
    if ((want && spans[k].id === want) || (!want && spans[k].r === "miss")) {
      openAncestors(k); rebuild(); select(k, true); break;
    }
  }
  document.body.setAttribute("data-ready", String(n));
  if (window.performance && performance.mark) performance.mark("otel-replay-ready");
})();
