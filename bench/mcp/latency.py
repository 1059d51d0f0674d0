#!/usr/bin/env python3
"""Tool-call latency of `mnemo mcp` through the official MCP Python SDK.

Usage: latency.py PATH_TO_MNEMO [CALLS]

Times CALLS (default 300) round trips per tool, client side (the SDK's
call_tool, JSON-RPC over stdio, the tool itself), after a warm-up, with a
fresh MNEMO_HOME holding 200 memories. Prints one JSON object with the
median and p95 in milliseconds per tool.
"""

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, round((len(values) - 1) * p))]


async def run(binary, calls, home):
    params = StdioServerParameters(command=binary, args=["mcp", "--quiet"], env={"MNEMO_HOME": home})
    out = {"calls_per_tool": calls}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for i in range(200):
                await session.call_tool(
                    "memory_store",
                    {"value": f"phase {i} auth endpoint token rotation note {i}", "key": f"seed/{i}"},
                )
            counter = iter(range(10**9))
            cases = {
                "memory_search": lambda: ("memory_search", {"query": "auth rotation", "top_k": 5}),
                "memory_recall": lambda: ("memory_recall", {"key": "seed/7"}),
                "memory_store": lambda: ("memory_store", {"value": f"bench memory {next(counter)} about caching"}),
                "memory_stats": lambda: ("memory_stats", {}),
                "scrub": lambda: ("scrub", {"text": "deploy with api_key=abcd1234efgh5678 and go"}),
                "compress_inline_score": lambda: (
                    "compress_inline",
                    {"mode": "score", "text": "Added JWT auth endpoint with refresh token rotation"},
                ),
                "compress_inline_compress": lambda: (
                    "compress_inline",
                    {"mode": "compress", "text": "Added JWT auth endpoint with refresh token rotation"},
                ),
            }
            for name, make in cases.items():
                for _ in range(20):
                    tool, args = make()
                    await session.call_tool(tool, args)
                times = []
                for _ in range(calls):
                    tool, args = make()
                    t = time.perf_counter()
                    result = await session.call_tool(tool, args)
                    times.append((time.perf_counter() - t) * 1000)
                    if getattr(result, "is_error", getattr(result, "isError", False)):
                        raise SystemExit(f"{name} failed: {result}")
                out[name] = {"p50_ms": round(statistics.median(times), 3), "p95_ms": round(pct(times, 0.95), 3)}
    out["all_p50_ms"] = round(statistics.median(v["p50_ms"] for k, v in out.items() if isinstance(v, dict)), 3)
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    with tempfile.TemporaryDirectory() as home:
        print(json.dumps(asyncio.run(run(binary, calls, home))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
