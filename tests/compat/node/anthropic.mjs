// Reads calls from a replay server's Messages route with @anthropic-ai/sdk and prints what the
// SDK assembled, as JSON (streamed: the final message and the raw tool input per block).
// Usage: node anthropic.mjs BASE_URL MODE CALLS   (MODE: stream | create)
// Default client settings (retries included): the server's answers alone must suffice.
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, mode, calls] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey: "any" });
const request = { model: "claude-replay", max_tokens: 1024, system: "be brief",
                  messages: [{ role: "user", content: "go" }] };
const out = [];

for (let n = 0; n < Number(calls); n++) {
  try {
    if (mode === "stream") {
      const stream = client.messages.stream(request);
      const partialJson = {};
      for await (const event of stream) {
        if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") {
          partialJson[event.index] = (partialJson[event.index] ?? "") + event.delta.partial_json;
        }
      }
      out.push({ message: await stream.finalMessage(), partialJson });
    } else {
      out.push({ message: await client.messages.create(request) });
    }
  } catch (err) {
    out.push({ error: { status: err.status ?? null, body: err.error ?? null } });
  }
}
process.stdout.write(JSON.stringify(out));
