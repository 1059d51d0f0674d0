#!/usr/bin/env bash
# Whole-process timing of `mnemo inline score …`, the call agents make through
# Pantheon's compress-inline.py, with hyperfine; peak memory with GNU time;
# the binary's size.
#
#   bash bench/inline.sh            # prints medians and the figures for the notes
#
# Beside it: /bin/true (the floor of any process), `python3 -c pass` (the
# floor of any Python peer) and, when PANTHEON_SCRIPT names a copy of
# Pantheon's compress-inline.py (not shipped here), the script itself.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
if ! need hyperfine || ! [ -x /usr/bin/time ]; then
    echo "installing hyperfine and GNU time (Debian packages)…" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq hyperfine time >/dev/null
fi

cargo build --release --locked -q -p mnemo-cli
bin=target/release/mnemo
out=bench/out
mkdir -p "$out"

args=(inline score --text "Added JWT auth endpoint with refresh token rotation" --from-agent hermes --to-agent aphrodite)
"$bin" "${args[@]}"

cmds=("$bin ${args[*]@Q}" "/bin/true" "python3 -c pass")
if [ -n "${PANTHEON_SCRIPT:-}" ]; then cmds+=("python3 $PANTHEON_SCRIPT ${args[*]:1@Q}"); fi
hyperfine --warmup 20 --runs 300 -N --export-json "$out/inline.json" "${cmds[@]}" >/dev/null

median() { python3 -c "import json,sys; r=json.load(open('$out/inline.json'))['results'][$1]; print(f\"{r['median']*1000:.3f}\")"; }
ours=$(median 0)
floor=$(median 1)
py=$(median 2)
rss=$( { /usr/bin/time -f '%M' "$bin" "${args[@]}" >/dev/null; } 2>&1 | tail -1 )
size=$(stat -c %s "$bin")

printf '\n%-40s %10s\n' "command" "median ms"
printf '%-40s %10s\n' "mnemo inline score" "$ours"
printf '%-40s %10s\n' "/bin/true" "$floor"
if [ -n "${PANTHEON_SCRIPT:-}" ]; then printf '%-40s %10s\n' "Pantheon compress-inline.py" "$(median 3)"; fi
printf '%-40s %10s\n' "python3 -c pass (floor of a Python peer)" "$py"
python3 -c "print(f'ratio python floor / mnemo: {float($py)/float($ours):.1f}x')"
echo "peak RSS of mnemo inline score: $(( rss )) KiB ($(python3 -c "print(f'{$rss/1024:.1f}')") MiB)"
echo "binary size: $size bytes ($(python3 -c "print(f'{$size/1048576:.1f}')") MiB)"
echo "targets: median <= 1.2 ms, peak RSS <= 8 MiB, binary <= 15 MB"
