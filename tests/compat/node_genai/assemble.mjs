// Reads calls from a replay server with @google/genai and prints what the client handed over, as JSON.
// Usage: node assemble.mjs BASE_URL MODE CALLS   (MODE: stream | generate)
// Default client settings: the server's answers alone must suffice.
import { GoogleGenAI } from "@google/genai";

const [baseUrl, mode, calls] = process.argv.slice(2);
const ai = new GoogleGenAI({ apiKey: "any", httpOptions: { baseUrl } });
const request = { model: "gemini-replay", contents: "go" };
const out = [];

for (let n = 0; n < Number(calls); n++) {
  const responses = [];
  try {
    if (mode === "stream") {
      for await (const response of await ai.models.generateContentStream(request)) {
        responses.push(response);
      }
    } else {
      responses.push(await ai.models.generateContent(request));
    }
    out.push({ responses });
  } catch (err) {
    out.push({ responses, error: { status: err.status ?? null, message: String(err.message) } });
  }
}
process.stdout.write(JSON.stringify(out));
