/**
 * An OpenAI chat request → Ollama's /api/chat request. What Ollama cannot do is refused here, as a
 * 400 naming the field, before anything is sent (a plugin must fail before its first stream event).
 */
import { PluginError, type ChatCompletionRequest, type ChatMessage } from "@reelay/plugin-sdk";

export interface OllamaMessage {
  role: string;
  content: string;
  images?: string[];
  tool_calls?: Array<{ function: { name: string; arguments: Record<string, unknown> } }>;
}

const invalid = (message: string, param: string) => new PluginError("invalid_request", message, { param });

export function toOllamaChat(body: ChatCompletionRequest, model: string, keepAlive: string | undefined, stream: boolean) {
  if ((body.n ?? 1) !== 1) throw invalid("Ollama gives one answer per request: n must be 1", "n");
  if (body.logprobs) throw invalid("this model does not return logprobs", "logprobs");
  const options: Record<string, unknown> = {};
  const max = body.max_completion_tokens ?? body.max_tokens;
  if (typeof max === "number") options.num_predict = max;
  for (const k of ["temperature", "top_p", "seed", "presence_penalty", "frequency_penalty"] as const) if (typeof body[k] === "number") options[k] = body[k];
  if (body.stop) options.stop = Array.isArray(body.stop) ? body.stop : [body.stop];
  const format = body.response_format?.type === "json_object" ? "json" : body.response_format?.type === "json_schema" ? body.response_format.json_schema.schema : undefined;
  const tools = body.tools?.map((t) => {
    if (t.type !== "function") throw invalid("only function tools are supported", "tools");
    return { type: "function", function: t.function };
  });
  return {
    model,
    messages: body.messages.map(toOllamaMessage),
    stream,
    ...(Object.keys(options).length ? { options } : {}),
    ...(format ? { format } : {}),
    ...(tools?.length ? { tools } : {}),
    ...(keepAlive ? { keep_alive: keepAlive } : {}),
  };
}

function toOllamaMessage(m: ChatMessage, i: number): OllamaMessage {
  if (m.role === "function") throw invalid("function messages are not supported; use tool messages", `messages[${i}]`);
  const out: OllamaMessage = { role: m.role === "developer" ? "system" : m.role, content: "" };
  if (typeof m.content === "string") out.content = m.content;
  else if (Array.isArray(m.content)) {
    for (const part of m.content) {
      if (part.type === "text") out.content += part.text;
      else if (part.type === "image_url") (out.images ??= []).push(dataUrlBase64(part.image_url.url, i));
      else throw invalid(`content parts of type ${part.type} are not supported`, `messages[${i}].content`);
    }
  }
  if (m.role === "assistant" && m.tool_calls?.length) {
    out.tool_calls = m.tool_calls.map((c) => {
      if (c.type !== "function") throw invalid("only function tool calls are supported", `messages[${i}].tool_calls`);
      return { function: { name: c.function.name, arguments: parseArguments(c.function.arguments, i) } };
    });
  }
  return out;
}

/** Ollama takes images as bare base64; it fetches no URL (and this plugin does not either). */
function dataUrlBase64(url: string, i: number): string {
  const m = /^data:image\/[\w.+-]+;base64,(.*)$/s.exec(url);
  if (!m) throw invalid("images must be data URLs (data:image/png;base64,…); this model fetches no image URL", `messages[${i}].content`);
  return m[1]!;
}

function parseArguments(text: string, i: number): Record<string, unknown> {
  try {
    const v = JSON.parse(text);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v;
  } catch {}
  throw invalid("tool call arguments must be a JSON object", `messages[${i}].tool_calls`);
}
