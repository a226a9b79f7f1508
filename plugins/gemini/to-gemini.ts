/**
 * An OpenAI chat request → a Gemini generateContent request (https://ai.google.dev/api/generate-content).
 *
 * - system and developer messages → `systemInstruction` text parts, in order
 * - user / assistant / tool messages → `contents` turns (roles user / model), consecutive
 *   messages of one role in one turn: Gemini wants a function call's responses together in the
 *   turn right after it
 * - images: data URLs → `inlineData`; http(s) URLs downloaded through reelay's SSRF guard (Gemini
 *   takes no arbitrary URLs) → `inlineData`; audio (`input_audio`) and PDFs (`file.file_data`) →
 *   `inlineData` too
 * - assistant `tool_calls` → `functionCall` parts (arguments parsed), with the `thoughtSignature`
 *   Gemini gave them (carried to the client in the call's `extra_content.google.thought_signature`,
 *   as Google's own OpenAI-compatible endpoint does: Gemini 3 refuses a function call turn without it)
 * - tool messages → `functionResponse` parts named after the call they answer (a result that is a
 *   JSON object is sent as it is, anything else as `{ content }`)
 * - tools → `functionDeclarations` with `parametersJsonSchema` (full JSON Schema, unlike
 *   `parameters`' OpenAPI subset); tool_choice → `toolConfig.functionCallingConfig` (none → NONE,
 *   auto → AUTO, required → ANY, a function → ANY with allowedFunctionNames)
 * - generationConfig: max_completion_tokens / max_tokens → maxOutputTokens, stop → stopSequences,
 *   temperature, top_p, top_k, seed, presence / frequency penalty, response_format →
 *   responseMimeType (+ responseJsonSchema), reasoning_effort → thinkingConfig
 * Refused with a 400 naming the field: n > 1, logprobs, audio output, file ids.
 */
import { PluginError, type ChatCompletionRequest, type ChatMessage, type ChatTool } from "@reelay/plugin-sdk";

export interface Part {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  functionCall?: { name: string; args: Record<string, unknown>; id?: string };
  functionResponse?: { name: string; response: Record<string, unknown>; id?: string };
}
export interface Content { role: "user" | "model"; parts: Part[] }

export interface TranslateOptions {
  thinking: "budget" | "level";
  reasoningBudgets: Record<string, number>;
  includeThoughts: boolean;
  safetySettings?: Array<{ category: string; threshold: string }>;
  /** an image URL's bytes (reelay's SSRF-guarded download) */
  fetchImage(url: string, param: string): Promise<{ mimeType: string; data: string }>;
}

const refuse = (param: string, message: string) => new PluginError("invalid_request", message, { param, code: "unsupported_parameter" });
const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

export async function toGenerateRequest(body: ChatCompletionRequest, o: TranslateOptions): Promise<Record<string, unknown>> {
  if (typeof body.n === "number" && body.n > 1) throw refuse("n", "This model answers one choice per request (n = 1).");
  if (body.logprobs === true) throw refuse("logprobs", "This model does not return log probabilities.");
  if (Array.isArray(body.modalities) && body.modalities.includes("audio")) throw refuse("modalities", "This model does not answer with audio.");
  const { system, contents } = await conversation(body.messages, o);
  const request: Record<string, unknown> = { contents };
  if (system.length) request.systemInstruction = { parts: system };
  const { tools, toolConfig } = toolsOf(body);
  if (tools) request.tools = tools;
  if (toolConfig) request.toolConfig = toolConfig;
  const config = generationConfig(body, o);
  if (Object.keys(config).length) request.generationConfig = config;
  if (o.safetySettings?.length) request.safetySettings = o.safetySettings;
  return request;
}

async function conversation(messages: ChatMessage[], o: TranslateOptions): Promise<{ system: Part[]; contents: Content[] }> {
  if (!Array.isArray(messages) || messages.length === 0) throw refuse("messages", "messages must be a non-empty array.");
  const system: Part[] = [];
  const contents: Content[] = [];
  /** tool call id → function name, for the responses that answer them */
  const calls = new Map<string, string>();
  const push = (role: Content["role"], parts: Part[]) => {
    if (!parts.length) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const [i, m] of messages.entries()) {
    const at = `messages[${i}]`;
    switch (m?.role) {
      case "system":
      case "developer":
        for (const text of texts(m.content, `${at}.content`)) system.push({ text });
        break;
      case "user":
        push("user", await userParts(m.content, `${at}.content`, o));
        break;
      case "assistant":
        push("model", assistantParts(m as any, at, calls));
        break;
      case "tool": {
        const id = (m as { tool_call_id?: unknown }).tool_call_id;
        const name = typeof id === "string" ? calls.get(id) : undefined;
        if (name === undefined) throw new PluginError("invalid_request", `${at} answers tool call ${JSON.stringify(id)}, which no assistant message before it made.`, { param: `${at}.tool_call_id` });
        const text = typeof m.content === "string" ? m.content : texts(m.content, `${at}.content`).join("\n");
        push("user", [{ functionResponse: { name, response: responseObject(text) } }]);
        break;
      }
      default:
        throw refuse(`${at}.role`, `${at} has role ${JSON.stringify((m as { role?: unknown })?.role)}; this model takes system, developer, user, assistant and tool messages.`);
    }
  }
  if (!contents.length) throw refuse("messages", "messages must contain a user message (a system prompt alone is not a conversation).");
  return { system, contents };
}

/** A tool's result as Gemini's `response` object: a JSON object as it is, anything else as `{ content }`. */
function responseObject(text: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(text);
    if (isObject(parsed)) return parsed;
  } catch {
    // plain text
  }
  return { content: text };
}

function texts(content: unknown, at: string): string[] {
  if (typeof content === "string") return content ? [content] : [];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw refuse(at, `${at} must be a string or an array of content parts.`);
  const out: string[] = [];
  for (const [j, p] of content.entries()) {
    if (p?.type === "text" && typeof p.text === "string") {
      if (p.text) out.push(p.text);
    } else if (p?.type === "refusal" && typeof p.refusal === "string") {
      if (p.refusal) out.push(p.refusal);
    } else throw refuse(`${at}[${j}]`, `${at}[${j}] is a ${JSON.stringify(p?.type)} part; only text is allowed here.`);
  }
  return out;
}

const AUDIO_TYPES: Record<string, string> = { wav: "audio/wav", mp3: "audio/mp3", flac: "audio/flac", ogg: "audio/ogg", aac: "audio/aac" };

async function userParts(content: unknown, at: string, o: TranslateOptions): Promise<Part[]> {
  if (typeof content === "string") return content ? [{ text: content }] : [];
  if (!Array.isArray(content)) throw refuse(at, `${at} must be a string or an array of content parts.`);
  const parts: Part[] = [];
  for (const [j, p] of content.entries()) {
    const here = `${at}[${j}]`;
    switch (p?.type) {
      case "text":
        if (typeof p.text !== "string") throw refuse(here, `${here}.text must be a string.`);
        if (p.text) parts.push({ text: p.text });
        break;
      case "image_url": {
        const url = p.image_url?.url;
        if (typeof url !== "string") throw refuse(`${here}.image_url.url`, `${here}.image_url.url must be a string.`);
        const data = dataUrl(url);
        if (data) parts.push({ inlineData: data });
        else if (/^https?:\/\//i.test(url)) parts.push({ inlineData: await o.fetchImage(url, `${here}.image_url.url`) });
        else throw refuse(`${here}.image_url.url`, `${here}.image_url.url must be an http(s) URL or a base64 data URL.`);
        break;
      }
      case "input_audio": {
        const mimeType = AUDIO_TYPES[String(p.input_audio?.format)];
        if (!mimeType || typeof p.input_audio?.data !== "string") throw refuse(here, `${here}: input_audio needs base64 data and a format (${Object.keys(AUDIO_TYPES).join(", ")}).`);
        parts.push({ inlineData: { mimeType, data: p.input_audio.data } });
        break;
      }
      case "file": {
        const data = typeof p.file?.file_data === "string" ? dataUrl(p.file.file_data) : null;
        if (!data) throw refuse(here, `${here}: this model takes files as data (file_data: "data:application/pdf;base64,…"), not file ids.`);
        parts.push({ inlineData: data });
        break;
      }
      default:
        throw refuse(here, `${here} is a ${JSON.stringify(p?.type)} part; this model takes text, images, audio and files.`);
    }
  }
  return parts;
}

export function dataUrl(url: string): { mimeType: string; data: string } | null {
  const m = /^data:([\w.+-]+\/[\w.+-]+);base64,(.*)$/s.exec(url);
  return m ? { mimeType: m[1]!.toLowerCase(), data: m[2]! } : null;
}

function assistantParts(m: { content?: unknown; tool_calls?: unknown; function_call?: unknown }, at: string, calls: Map<string, string>): Part[] {
  if (m.function_call) throw refuse(`${at}.function_call`, `${at}.function_call (the deprecated single function call) is not taken; send tool_calls.`);
  const parts: Part[] = texts(m.content, `${at}.content`).map((text) => ({ text }));
  for (const [j, c] of (Array.isArray(m.tool_calls) ? m.tool_calls : []).entries()) {
    const here = `${at}.tool_calls[${j}]`;
    if (typeof c?.id !== "string" || c.type !== "function" || typeof c.function?.name !== "string") throw refuse(here, `${here} must be a function call with an id and a name.`);
    let args: unknown;
    try {
      args = c.function.arguments ? JSON.parse(c.function.arguments) : {};
    } catch {
      throw new PluginError("invalid_request", `${here}.function.arguments is not JSON; this model takes tool arguments as a JSON object.`, { param: `${here}.function.arguments` });
    }
    if (!isObject(args)) throw new PluginError("invalid_request", `${here}.function.arguments must be a JSON object.`, { param: `${here}.function.arguments` });
    calls.set(c.id, c.function.name);
    const signature = c.extra_content?.google?.thought_signature;
    parts.push({ functionCall: { name: c.function.name, args }, ...(typeof signature === "string" ? { thoughtSignature: signature } : {}) });
  }
  return parts;
}

function toolsOf(body: ChatCompletionRequest): { tools?: unknown[]; toolConfig?: Record<string, unknown> } {
  const list: ChatTool[] = Array.isArray(body.tools) ? body.tools : [];
  if (!list.length) return {};
  const declarations = list.map((t, i) => {
    if (t?.type !== "function" || typeof t.function?.name !== "string") throw refuse(`tools[${i}]`, `tools[${i}] is not a function tool (this model takes function tools).`);
    return { name: t.function.name, ...(t.function.description ? { description: t.function.description } : {}), ...(isObject(t.function.parameters) ? { parametersJsonSchema: t.function.parameters } : {}) };
  });
  const choice = body.tool_choice;
  let config: Record<string, unknown> | undefined;
  if (choice === "none") config = { mode: "NONE" };
  else if (choice === "auto") config = { mode: "AUTO" };
  else if (choice === "required") config = { mode: "ANY" };
  else if (isObject(choice) && choice.type === "function" && typeof choice.function?.name === "string") config = { mode: "ANY", allowedFunctionNames: [choice.function.name] };
  return { tools: [{ functionDeclarations: declarations }], ...(config ? { toolConfig: { functionCallingConfig: config } } : {}) };
}

function generationConfig(body: ChatCompletionRequest, o: TranslateOptions): Record<string, unknown> {
  const g: Record<string, unknown> = {};
  const max = body.max_completion_tokens ?? body.max_tokens;
  if (typeof max === "number") g.maxOutputTokens = max;
  const stop = typeof body.stop === "string" ? [body.stop] : Array.isArray(body.stop) ? body.stop : [];
  if (stop.length) g.stopSequences = stop;
  const numbers = { temperature: "temperature", top_p: "topP", top_k: "topK", seed: "seed", presence_penalty: "presencePenalty", frequency_penalty: "frequencyPenalty" } as const;
  for (const [from, to] of Object.entries(numbers)) if (typeof body[from] === "number") g[to] = body[from];
  const rf = body.response_format;
  if (isObject(rf) && rf.type === "json_object") g.responseMimeType = "application/json";
  if (isObject(rf) && rf.type === "json_schema" && isObject(rf.json_schema?.schema)) Object.assign(g, { responseMimeType: "application/json", responseJsonSchema: rf.json_schema.schema });
  const thinking = thinkingConfig(body.reasoning_effort, o);
  if (thinking) g.thinkingConfig = thinking;
  return g;
}

/** reasoning_effort → thinkingConfig: a budget (Gemini 2.5) or a level (Gemini 3); thoughts included when asked. */
function thinkingConfig(effort: unknown, o: TranslateOptions): Record<string, unknown> | undefined {
  const include = o.includeThoughts ? { includeThoughts: true } : {};
  if (effort === "none") return o.thinking === "budget" ? { thinkingBudget: 0 } : undefined;
  if (typeof effort === "string" && (o.thinking === "level" || effort in o.reasoningBudgets)) {
    return o.thinking === "level" ? { thinkingLevel: effort, ...include } : { thinkingBudget: o.reasoningBudgets[effort], ...include };
  }
  return o.includeThoughts ? include : undefined;
}
