// Reads calls from a replay server with openai-node and prints what the SDK assembled, as JSON.
// Usage: node assemble.mjs BASE_URL MODE CALLS
// MODE: helper | raw (chat completions), responses-stream | responses-create (Responses).
// Default client settings (retries included): the server's answers alone must suffice.
import OpenAI from "openai";

const [baseURL, mode, calls] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "any" });
const request = { model: "deepseek-chat", messages: [{ role: "user", content: "go" }] };
const responsesRequest = { model: "gpt-replay", instructions: "be brief", input: "go" };
const out = [];

for (let n = 0; n < Number(calls); n++) {
  try {
    if (mode === "responses-stream") {
      out.push({ response: await client.responses.stream(responsesRequest).finalResponse() });
    } else if (mode === "responses-create") {
      out.push({ response: await client.responses.create(responsesRequest) });
    } else if (mode === "helper") {
      const stream = client.chat.completions.stream(request);
      out.push({ completion: await stream.finalChatCompletion() });
    } else {
      const stream = await client.chat.completions.create({ ...request, stream: true });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      out.push({ chunks });
    }
  } catch (err) {
    out.push({ error: { status: err.status ?? null, code: err.code ?? err.error?.code ?? null,
                        message: String(err.message) } });
  }
}
process.stdout.write(JSON.stringify(out));
