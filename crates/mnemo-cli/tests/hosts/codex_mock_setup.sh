# Sourced by the Codex session scripts (with CODEX, MNEMO, W and HERE
# set): brings loopback up, starts the mock model server (its PID in MOCK,
# its port in PORT) and writes a Codex config.toml for it in $W/home.
ip link set lo up
mkdir -p "$W/home" "$W/proj" "$W/bin"
python3 "$HERE/mock_openai.py" "$W/port" "$W/requests.jsonl" &
MOCK=$!
i=0; while [ ! -s "$W/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
PORT=$(cat "$W/port")
cat > "$W/home/config.toml" <<TOML
model = "mock-model"
model_provider = "mock"
model_auto_compact_token_limit = 100000

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:$PORT/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
TOML
