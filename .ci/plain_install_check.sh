#!/usr/bin/env bash
# A plain install (no extras) in a fresh venv drives every demo-agent dialect against
# `dsh-replay serve sample_scenarios/basic-chat`: what README users get must work on each wire.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(mktemp -d)/plain"
python3 -m venv "$venv"
"$venv/bin/pip" install -q .
work="$(mktemp -d)"
url_file="$work/url"
"$venv/bin/dsh-replay" serve sample_scenarios/basic-chat --port 0 --url-file "$url_file" \
    >"$work/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work" "$(dirname "$venv")"' EXIT
for _ in $(seq 1 200); do
    [ -s "$url_file" ] && break
    sleep 0.05
done
[ -s "$url_file" ] || { cat "$work/serve.log"; echo "the server did not start" >&2; exit 1; }
url="$(cat "$url_file")"
for dialect in openai anthropic responses gemini; do
    run="plain-$dialect"
    echo "demo-agent --dialect $dialect"
    "$venv/bin/dsh-replay" demo-agent "$url" --dialect "$dialect" --run "$run"
done
