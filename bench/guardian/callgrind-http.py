#!/usr/bin/env python3
"""Instructions per HTTP request of `mnemo guard http`, load-independent.

Runs the server under `valgrind --tool=callgrind` twice (N1 and N2 requests
over C keep-alive connections, each a unique steps/userMessage) and prints
(Ir(N2) - Ir(N1)) / (N2 - N1): the instructions one request costs, start-up
and shutdown cancelled out.
Usage: bench/guardian/callgrind-http.py path/to/mnemo [N1 N2 C] [--store sqlite|memory|postgres]
(postgres: the database in $MNEMO_BENCH_POSTGRES_URL, else $MNEMO_TEST_POSTGRES_URL;
only the Guardian process is counted, not the database server; each run
uses a session of its own, so the database may outlive runs)
(or the `http_server` example of mnemo-guardian-server in place of mnemo)
"""
import os, re, signal, socket, subprocess, sys, tempfile, time

def run(mnemo, n, conns, store, tmp):
    port = 18000 + (os.getpid() + n) % 2000
    policy = os.path.join(tmp, "policy.toml")
    with open(policy, "w") as f:
        f.write("[guardian]\ncheck_timestamps = false\nrequire_handshake = false\n")
    out = os.path.join(tmp, f"cg.{n}")
    if store == "memory":
        args = ["--memory"]
    elif store == "postgres":
        url = os.environ.get("MNEMO_BENCH_POSTGRES_URL") or os.environ.get("MNEMO_TEST_POSTGRES_URL")
        if not url:
            raise SystemExit("--store postgres: set MNEMO_BENCH_POSTGRES_URL (or MNEMO_TEST_POSTGRES_URL)")
        args = ["--store", url]
    else:
        args = ["--store", os.path.join(tmp, f"g{n}.sqlite3")]
    session = "7c9e6679-7425-40de-944b-%012d" % (time.time_ns() // 1000 % 10**12)
    if os.path.basename(mnemo) == "http_server":
        # The crate's example: ADDR [STORE.sqlite3], same checks switched off.
        cmd = [mnemo, f"127.0.0.1:{port}"] + ([] if store == "memory" else [args[1]])
    else:
        cmd = [mnemo, "--quiet", "guard", "http", "--listen", f"127.0.0.1:{port}",
               "--policy", policy] + args
    p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + cmd,
                         stderr=subprocess.DEVNULL)
    socks = []
    for _ in range(600):
        try:
            socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(conns)]
            break
        except OSError:
            time.sleep(0.1)
    k = 0
    while k < n:
        batch = socks[: min(conns, n - k)]
        for s in batch:
            k += 1
            rid = f"00000000-0000-4000-8000-{k:012d}"
            body = ('{"jsonrpc":"2.0","method":"steps/userMessage","id":%d,"params":{"acs_version":"0.1.0",'
                    '"request_id":"%s","timestamp":"2026-09-19T10:00:00Z","metadata":{"agent_id":"bench",'
                    '"session_id":"%s"},"payload":{"content":[{"type":"text",'
                    '"value":"hello","provenance":{"provenance_id":"p-%s","origin":"user_input"}}]}}}') % (k, rid, session, rid)
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body.encode()))
        for s in batch:
            buf = b""
            while True:
                buf += s.recv(65536)
                m = re.search(rb"content-length: *(\d+)\r\n", buf, re.I)
                h = buf.find(b"\r\n\r\n")
                if m and h >= 0 and len(buf) >= h + 4 + int(m.group(1)):
                    assert b'"decision":"allow"' in buf, buf[:300]
                    break
    for s in socks:
        s.close()
    p.send_signal(signal.SIGTERM)
    p.wait()
    with open(out) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit("no totals in callgrind output")

def main():
    a = [x for x in sys.argv[1:] if not x.startswith("--")]
    store = sys.argv[sys.argv.index("--store") + 1] if "--store" in sys.argv[:-1] else "memory"
    if store not in ("sqlite", "memory", "postgres"):
        raise SystemExit(f"--store {store}: sqlite, memory or postgres")
    a = [x for x in a if x not in ("sqlite", "memory", "postgres")]
    mnemo = a[0]
    n1, n2, c = (int(x) for x in (a[1:4] if len(a) >= 4 else (200, 1200, 8)))
    with tempfile.TemporaryDirectory() as tmp:
        i1 = run(mnemo, n1, c, store, tmp)
        i2 = run(mnemo, n2, c, store, tmp)
    print(f"{mnemo} store={store} conns={c}: {(i2 - i1) / (n2 - n1):,.0f} instructions/request "
          f"(Ir {i1:,} at {n1}, {i2:,} at {n2})")

main()
