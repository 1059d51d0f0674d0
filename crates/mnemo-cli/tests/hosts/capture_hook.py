"""A hook beside mnemo's that records what the host hands its hooks: the
hook input (one JSON line appended to argv[1]) plus `_transcript_lines` and
`_prompt_seen` (whether a transcript line of the input's prompt_id was
written when the hook ran) and `_transcript_tail` (type, subtype, promptId
of the last three lines). Prints nothing, exits 0."""
import json
import sys

raw = sys.stdin.read()
try:
    v = json.loads(raw)
except ValueError:
    v = {"_raw": raw}
path = v.get("transcript_path") if isinstance(v, dict) else None
if path:
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
        v["_transcript_lines"] = len(lines)
        pid = v.get("prompt_id")
        v["_prompt_seen"] = bool(pid) and any(f'"promptId":"{pid}"' in l for l in lines)
        tail = []
        for l in lines[-3:]:
            try:
                j = json.loads(l)
                tail.append([j.get("type"), j.get("subtype"), j.get("promptId")])
            except ValueError:
                tail.append(["bad", None, None])
        v["_transcript_tail"] = tail
    except OSError:
        v["_transcript_lines"] = None
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(v) + "\n")
