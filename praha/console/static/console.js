// praha console: live refresh of each page's live part, confirmation of changes, scan progress.
(function () {
  "use strict";
  const live = document.getElementById("live");
  const dot = document.getElementById("live-state");
  const every = parseInt(document.body.dataset.refresh || "2000", 10);
  async function refresh() {
    if (!live || document.hidden) return;
    try {
      const r = await fetch(location.href, { headers: { "X-Live": "1" }, credentials: "same-origin" });
      if (r.ok) { live.innerHTML = await r.text(); if (dot) dot.className = "ok"; }
      else if (dot) dot.className = "stale";
    } catch (e) { if (dot) dot.className = "stale"; }
  }
  if (live && live.innerHTML.trim()) setInterval(refresh, every);

  // every change asks first; the server refuses a change without confirmed=yes. One listener
  // on the document: forms in the live part are replaced by each refresh
  document.addEventListener("submit", function (ev) {
    const form = ev.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
    if (!window.confirm(form.dataset.confirm)) { ev.preventDefault(); return; }
    const c = form.querySelector("input[name=confirmed]");
    if (c) c.value = "yes";
  });

  // a scan streams its progress (server-sent events), then its results
  const scan = document.getElementById("scan");
  if (scan && scan.dataset.scanUrl) {
    const bar = document.getElementById("scan-progress");
    const status = document.getElementById("scan-status");
    const results = document.getElementById("scan-results");
    bar.hidden = false;
    status.textContent = "scanning…";
    const es = new EventSource(scan.dataset.scanUrl);
    es.addEventListener("progress", function (ev) {
      const p = JSON.parse(ev.data);
      bar.max = Math.max(1, p.total); bar.value = p.scanned;
      status.textContent = "scanned " + p.scanned + " of " + p.total + ", " + p.matched + " matched";
    });
    es.addEventListener("done", function (ev) {
      const p = JSON.parse(ev.data);
      bar.value = bar.max; status.textContent = "done: scanned " + p.scanned + ", " + p.matched + " matched";
      results.innerHTML = p.html; es.close();
    });
    es.addEventListener("error", function (ev) {
      if (ev.data) { status.textContent = JSON.parse(ev.data).error; status.className = "error"; }
      es.close();
    });
  }
})();
