// Reads calls from a replay server's Responses route with the AI SDK's @ai-sdk/openai (its
// default model is the Responses one) and prints what the SDK assembled, as JSON.
// Usage: node assemble.mjs BASE_URL MODE CALLS TOOLS_JSON   (MODE: stream | generate)
// maxRetries: 0 as the README says: the AI SDK ignores x-should-retry.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, streamText, tool } from "ai";

const [baseURL, mode, calls, toolNames] = process.argv.slice(2);
const provider = createOpenAI({ baseURL, apiKey: "any" });
const tools = Object.fromEntries(JSON.parse(toolNames).map((name) => [
  name, tool({ description: `the recorded ${name} tool`, inputSchema: jsonSchema({ type: "object" }) }),
]));
const request = { model: provider("gpt-5"), prompt: "go", tools, maxRetries: 0 };
const out = [];

function call(reasoning, text, toolCalls, finishReason, usage) {
  return {
    reasoning, text, finishReason,
    toolCalls: toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })),
    usage: { inputTokens: usage.inputTokens ?? null, outputTokens: usage.outputTokens ?? null },
  };
}

for (let n = 0; n < Number(calls); n++) {
  try {
    if (mode === "stream") {
      const result = streamText({ ...request, onError: () => {} });
      const reasoning = new Map();
      let text = "";
      const toolCalls = [];
      let finish = null;
      let usage = {};
      for await (const part of result.fullStream) {
        if (part.type === "reasoning-start") reasoning.set(part.id, "");
        else if (part.type === "reasoning-delta") reasoning.set(part.id, (reasoning.get(part.id) ?? "") + part.text);
        else if (part.type === "text-delta") text += part.text;
        else if (part.type === "tool-call") toolCalls.push(part);
        else if (part.type === "finish") { finish = part.finishReason; usage = part.totalUsage; }
        else if (part.type === "error") throw part.error;
      }
      out.push(call([...reasoning.values()], text, toolCalls, finish, usage));
    } else {
      const result = await generateText(request);
      out.push(call(result.reasoning.map((r) => r.text), result.text, result.toolCalls,
                    result.finishReason, result.usage));
    }
  } catch (err) {
    out.push({ error: { status: err.statusCode ?? null, message: String(err.message) } });
  }
}
process.stdout.write(JSON.stringify(out));
