#!/usr/bin/env python3
"""How long headless Chromium takes to render a `mnemo report` page.

Opens PAGE N times (default 5), each in a fresh browser and profile, with
the DevTools client of the browser test (crates/mnemo-cli/tests/browser/
check_page.py), and prints, per run and as medians:

* nav_load_ms: the page's own Navigation Timing, startTime -> loadEventEnd;
* fcp_ms: first-contentful-paint from the Paint Timing API;
* full_layout_ms: from navigationStart until a forced layout of the whole
  document (document.documentElement.scrollHeight read after load) has
  returned, measured in the page (performance.now());
* elements / nodes: document.getElementsByTagName('*').length and every
  node a TreeWalker visits (elements, text, comments);
* renderer TaskDuration / LayoutDuration (Performance.getMetrics, seconds).

usage: render.py CHROMIUM PAGE.html [N]
"""
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "crates", "mnemo-cli", "tests", "browser"))

from check_page import Browser  # noqa: E402

PROBE = r"""
(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  const h = document.documentElement.scrollHeight;
  const laid = performance.now();
  let nodes = 0;
  const w = document.createTreeWalker(document, NodeFilter.SHOW_ALL);
  while (w.nextNode()) nodes++;
  return JSON.stringify({
    nav_load_ms: nav ? nav.loadEventEnd - nav.startTime : null,
    fcp_ms: fcp ? fcp.startTime : null,
    full_layout_ms: laid,
    scroll_height: h,
    elements: document.getElementsByTagName('*').length,
    nodes: nodes,
  });
})()
"""


def one(chromium, url):
    with tempfile.TemporaryDirectory(prefix="mnemo-render-") as profile:
        b = Browser(chromium, profile)
        try:
            targets = b.call("Target.getTargets")["targetInfos"]
            tid = next(t["targetId"] for t in targets if t["type"] == "page")
            sid = b.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Performance"):
                b.call(f"{domain}.enable", session=sid)
            b.call("Emulation.setDeviceMetricsOverride",
                   {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                   session=sid)
            b.events.clear()
            b.call("Page.navigate", {"url": url}, session=sid)
            b.wait_event("Page.loadEventFired", timeout=120)
            out = json.loads(b.call("Runtime.evaluate", {"expression": PROBE, "returnByValue": True},
                                    session=sid, timeout=120)["result"]["value"])
            metrics = {m["name"]: m["value"] for m in
                       b.call("Performance.getMetrics", session=sid)["metrics"]}
            out["task_s"] = round(metrics.get("TaskDuration", 0.0), 3)
            out["layout_s"] = round(metrics.get("LayoutDuration", 0.0), 3)
            return out
        finally:
            b.close()


def main():
    chromium, page = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    url = "file://" + os.path.abspath(page)
    runs = []
    for i in range(n):
        r = one(chromium, url)
        runs.append(r)
        print(json.dumps({"run": i + 1, **r}))
    med = {k: round(statistics.median(r[k] for r in runs), 1) for k in
           ("nav_load_ms", "fcp_ms", "full_layout_ms", "task_s", "layout_s")
           if all(r.get(k) is not None for r in runs)}
    print(json.dumps({"page_bytes": os.path.getsize(page), "runs": n,
                      "elements": runs[0]["elements"], "nodes": runs[0]["nodes"],
                      "median": med, "loadavg": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
