// Reads calls from a replay server with the AI SDK and prints what it assembled, as JSON:
// PROVIDER openai is @ai-sdk/openai on its default (Responses) model, compatible is
// @ai-sdk/openai-compatible on the chat-completions route.
// Usage: node assemble.mjs BASE_URL MODE CALLS TOOLS_JSON [PROVIDER]
// MODE: stream (streamText's parts) | generate (generateText) | text (streamText's text and
// finishReason promises, as an agent awaits them).
// maxRetries: 0 as the README says: the AI SDK ignores x-should-retry.
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, jsonSchema, streamText, tool } from "ai";

const [baseURL, mode, calls, toolNames, providerName = "openai"] = process.argv.slice(2);
const model = providerName === "compatible"
  ? createOpenAICompatible({ name: "replay", baseURL, apiKey: "any" })("deepseek-chat")
  : createOpenAI({ baseURL, apiKey: "any" })("gpt-5");
const tools = Object.fromEntries(JSON.parse(toolNames).map((name) => [
  name, tool({ description: `the recorded ${name} tool`, inputSchema: jsonSchema({ type: "object" }) }),
]));
const request = { model, prompt: "go", tools, maxRetries: 0 };
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
    if (mode === "text") {
      const result = streamText({ ...request, onError: () => {} });
      out.push({ text: await result.text, finishReason: await result.finishReason });
    } else if (mode === "stream") {
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
