#!/usr/bin/env python3
"""Opens an HTML page in headless Chromium and reports what the browser saw.

Drives Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe:
NUL-terminated JSON messages on file descriptors 3 and 4), so it needs
nothing but Python's standard library. Prints one JSON object:
console errors, network requests other than the page itself, load time,
screenshot size and how much of it is not background, and what the DOM
says (section counts, table rows, totals, script elements, entry texts).

usage: check_page.py CHROMIUM PAGE.html SCREENSHOT.png WIDTH HEIGHT
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib
import base64

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
    "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
    "--remote-debugging-pipe",
]

DOM_PROBE = r"""
(() => {
  const out = {sections: {}, totals: {}, headings: [], captions: 0};
  for (const s of document.querySelectorAll('main > section')) {
    const rows = {};
    for (const t of s.querySelectorAll('table')) {
      const key = t.id || t.className;
      rows[key] = (rows[key] || 0) + t.querySelectorAll('tbody tr').length;
    }
    out.sections[s.id] = {
      count: s.dataset.count === undefined ? null : Number(s.dataset.count),
      heading: (s.querySelector('h2') || {}).textContent || null,
      rows: rows,
      svgs: s.querySelectorAll('svg[role=img]').length,
      sessions: Array.from(s.querySelectorAll('article.session')).map(a => ({
        id: a.dataset.session, steps: Number(a.dataset.steps),
        allowed: Number(a.dataset.allowed), denied: Number(a.dataset.denied),
        step_rows: a.querySelectorAll('table.steps-table tbody tr').length,
        decision_rows: a.querySelectorAll('table.compactions-table tbody tr').length})),
    };
  }
  for (const d of document.querySelectorAll('[data-total]')) out.totals[d.dataset.total] = d.textContent;
  for (const h of document.querySelectorAll('h1, h2, h3')) out.headings.push(h.tagName + ' ' + h.textContent);
  out.captions = document.querySelectorAll('table > caption').length;
  out.tables = document.querySelectorAll('table').length;
  out.scripts = document.querySelectorAll('script').length;
  out.entry_texts = Array.from(document.querySelectorAll('#entries-table td.entry')).map(p => p.textContent);
  out.title = document.title;
  out.scroll_height = document.documentElement.scrollHeight;
  return JSON.stringify(out);
})()
"""


class Browser:
    def __init__(self, chromium, profile):
        to_r, to_w = os.pipe()      # we write, the browser reads (fd 3)
        from_r, from_w = os.pipe()  # the browser writes (fd 4), we read

        def child():
            # Duplicate first: dup2 onto the same number would keep the
            # close-on-exec flag of os.pipe's descriptors.
            a, b = os.dup(to_r), os.dup(from_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child, close_fds=False)
        os.close(to_r)
        os.close(from_w)
        self.w = os.fdopen(to_w, "wb", buffering=0)
        self.r = os.fdopen(from_r, "rb", buffering=0)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from the browser")
            chunk = self.r.read(65536)
            if not chunk:
                raise EOFError("the browser closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.w.write(json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, timeout=30):
        deadline = time.monotonic() + timeout
        for i, m in enumerate(self.events):
            if m.get("method") == name:
                return self.events.pop(i)
        while True:
            m = self._read_message(deadline)
            self.events.append(m)
            if m.get("method") == name:
                return m

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def png_stats(data):
    """Width, height and the share of pixels that differ from the first one."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = ihdr[0], ihdr[1], ihdr[2], ihdr[3]
    if depth != 8 or ctype not in (2, 6):
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {ctype})")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    first, differing, distinct = None, 0, set()
    p = 0
    for _ in range(h):
        f = raw[p]
        line = bytearray(raw[p + 1:p + 1 + stride])
        p += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        for x in range(0, stride, bpp * 4):  # every fourth pixel is enough
            px = bytes(line[x:x + 3])
            if first is None:
                first = px
            if px != first:
                differing += 1
            if len(distinct) < 64:
                distinct.add(px)
        prev = line
    sampled = h * ((stride + bpp * 4 - 1) // (bpp * 4))
    return w, h, differing / max(1, sampled), len(distinct)


def main():
    chromium, page, shot, width, height = sys.argv[1:6]
    width, height = int(width), int(height)
    page_url = "file://" + os.path.abspath(page)
    with tempfile.TemporaryDirectory(prefix="mnemo-chromium-") as profile:
        b = Browser(chromium, profile)
        try:
            targets = b.call("Target.getTargets")["targetInfos"]
            tid = next(t["targetId"] for t in targets if t["type"] == "page")
            sid = b.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network", "Performance"):
                b.call(f"{domain}.enable", session=sid)
            b.call("Emulation.setDeviceMetricsOverride",
                   {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                   session=sid)
            b.events.clear()
            t0 = time.monotonic()
            b.call("Page.navigate", {"url": page_url}, session=sid)
            b.wait_event("Page.loadEventFired")
            load_s = time.monotonic() - t0
            # Force a full layout, then read the renderer's own CPU figures
            # (main-thread task, layout and style time: less sensitive to a
            # loaded machine than the wall clock).
            b.call("Runtime.evaluate", {"expression": "document.body.getBoundingClientRect().height"},
                   session=sid)
            metrics = {m["name"]: m["value"] for m in
                       b.call("Performance.getMetrics", session=sid)["metrics"]}
            dom = json.loads(b.call("Runtime.evaluate",
                                    {"expression": DOM_PROBE, "returnByValue": True},
                                    session=sid)["result"]["value"])
            png = base64.b64decode(b.call("Page.captureScreenshot", {"format": "png"},
                                          session=sid)["data"])
            with open(shot, "wb") as f:
                f.write(png)
            # Drain what arrived meanwhile.
            try:
                b.call("Runtime.evaluate", {"expression": "1"}, session=sid)
            except Exception:
                pass
        finally:
            b.close()
    errors, requests = [], []
    for m in b.events:
        meth, p = m.get("method"), m.get("params", {})
        if meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append(json.dumps(p.get("args", []))[:300])
        elif meth == "Runtime.exceptionThrown":
            errors.append(json.dumps(p.get("exceptionDetails", {}))[:300])
        elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            errors.append(p["entry"].get("text", "")[:300])
        elif meth == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if url != page_url:
                requests.append(url)
    w, h, nonbg, distinct = png_stats(png)
    print(json.dumps({
        "load_seconds": round(load_s, 3),
        "renderer_seconds": {k: round(metrics.get(k, 0.0), 3) for k in
                             ("TaskDuration", "LayoutDuration", "RecalcStyleDuration", "ScriptDuration")},
        "console_errors": errors,
        "requests": requests,
        "screenshot": {"width": w, "height": h, "non_background": round(nonbg, 4),
                       "distinct_colours": distinct, "bytes": len(png)},
        "dom": dom,
    }))


if __name__ == "__main__":
    main()
