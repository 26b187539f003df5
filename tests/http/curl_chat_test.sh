#!/usr/bin/env bash
# curl against vkstreamd --http on stories260K (CPU): a greedy chat answered whole and as SSE
# (`curl -N`) gives the same reply, /api/chat (curl -d, no Content-Type) gives it too, a
# response_format json_schema / Ollama format schema makes the reply valid against the schema
# (checked with python3-jsonschema), and a bad conversation is a 400 with an OpenAI error object.
set -euo pipefail
build="${VKSTREAM_BUILD_DIR:?}"
models="${VKSTREAM_MODELS:-$(dirname "$0")/../../../shared/models}"
py=/usr/bin/python3
dir="$(mktemp -d)"
daemon_pid=""
cleanup() {
  if [[ -n "$daemon_pid" ]]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- daemon log:" >&2; cat "$dir/log" >&2; exit 1; }

"$build/server/vkstreamd" --model "$models/stories260K.gguf" --cpu --socket "$dir/s.sock" \
  --zmq "ipc://$dir/r.zmq" --pub "ipc://$dir/p.zmq" --http 127.0.0.1:0 >"$dir/log" 2>&1 &
daemon_pid=$!
base=""
for _ in $(seq 1 600); do
  base="$(grep -o 'HTTP API on http://127\.0\.0\.1:[0-9]*' "$dir/log" | head -1 | sed 's/HTTP API on //' || true)"
  if [[ -n "$base" ]] && grep -q 'vkstreamd ready' "$dir/log"; then break; fi
  kill -0 "$daemon_pid" 2>/dev/null || fail "vkstreamd exited"
  sleep 0.1
done
[[ -n "$base" ]] || fail "vkstreamd did not start"

messages='[{"role":"system","content":"You tell short stories about Lily and her dog."},{"role":"user","content":"Tell me a story about the park."}]'
whole="$(curl -sS --fail-with-body "$base/v1/chat/completions" -H 'Content-Type: application/json' \
  -d "{\"messages\":$messages,\"max_tokens\":24,\"temperature\":0}")" || fail "chat: $whole"
reply="$(printf '%s' "$whole" | $py -c '
import json, sys
a = json.load(sys.stdin)
assert a["object"] == "chat.completion", a
m = a["choices"][0]["message"]
assert m["role"] == "assistant" and m["content"], a
sys.stdout.write(json.dumps(m["content"]))')" || fail "chat answer: $whole"

curl -sS -N --fail-with-body "$base/v1/chat/completions" -H 'Content-Type: application/json' \
  -d "{\"messages\":$messages,\"max_tokens\":24,\"temperature\":0,\"stream\":true}" >"$dir/sse" || fail "stream"
streamed="$($py -c '
import json, sys
events = [l for l in open(sys.argv[1]).read().split("\n") if l]
assert all(l.startswith("data: ") for l in events), events
assert events[-1] == "data: [DONE]", events[-1]
chunks = [json.loads(l[6:]) for l in events[:-1]]
assert chunks[0]["choices"][0]["delta"]["role"] == "assistant", chunks[0]
assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length"), chunks[-1]
sys.stdout.write(json.dumps("".join(c["choices"][0]["delta"].get("content", "") for c in chunks)))' "$dir/sse")" \
  || fail "SSE stream: $(cat "$dir/sse")"
[[ "$streamed" == "$reply" ]] || fail "streamed reply $streamed != whole reply $reply"

ollama="$(curl -sS --fail-with-body "$base/api/chat" \
  -d "{\"model\":\"stories260K\",\"messages\":$messages,\"stream\":false,\"options\":{\"num_predict\":24,\"temperature\":0}}")" \
  || fail "api/chat: $ollama"
ollama_reply="$(printf '%s' "$ollama" | $py -c '
import json, sys
a = json.load(sys.stdin)
assert a["done"] is True and a["message"]["role"] == "assistant", a
sys.stdout.write(json.dumps(a["message"]["content"]))')" || fail "api/chat answer: $ollama"
[[ "$ollama_reply" == "$reply" ]] || fail "/api/chat reply $ollama_reply != $reply"

status="$(curl -sS -o "$dir/err" -w '%{http_code}' "$base/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"wizard","content":"hi"}]}')"
[[ "$status" == 400 ]] || fail "bad role: status $status"
$py -c 'import json, sys; e = json.load(open(sys.argv[1]))["error"]; assert e["param"] == "messages.0.role", e' "$dir/err" \
  || fail "bad role: $(cat "$dir/err")"
schema='{"type":"object","properties":{"mood":{"enum":["happy","sad"]},"age":{"type":"integer","minimum":0,"maximum":120}},"required":["mood","age"],"additionalProperties":false}'
printf '%s' "$schema" >"$dir/schema.json"
validate() {  # validate FILE KEY...: the reply at that path is JSON text valid against the schema
  $py -c '
import json, sys, jsonschema
answer = json.load(open(sys.argv[1]))
for key in sys.argv[3:]:
    answer = answer[int(key)] if key.isdigit() else answer[key]
jsonschema.validate(json.loads(answer), json.load(open(sys.argv[2])))' "$@"
}
curl -sS --fail-with-body -o "$dir/constrained" "$base/v1/chat/completions" -H 'Content-Type: application/json' \
  -d "{\"messages\":$messages,\"max_tokens\":120,\"temperature\":0.7,\"seed\":11,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"m\",\"schema\":$schema}}}" \
  || fail "response_format: $(cat "$dir/constrained")"
validate "$dir/constrained" "$dir/schema.json" choices 0 message content || fail "response_format reply: $(cat "$dir/constrained")"
curl -sS --fail-with-body -o "$dir/constrained" "$base/api/chat" \
  -d "{\"model\":\"stories260K\",\"messages\":$messages,\"stream\":false,\"format\":$schema,\"options\":{\"num_predict\":120,\"temperature\":0}}" \
  || fail "format: $(cat "$dir/constrained")"
validate "$dir/constrained" "$dir/schema.json" message content || fail "format reply: $(cat "$dir/constrained")"
echo "curl chat: ok ($reply)"
