/**
 * An OpenAI chat request → a Bedrock Converse request (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html).
 *
 * - system and developer messages → `system` text blocks (a cachePoint after them with `cachePrompt`)
 * - user / assistant / tool messages → `messages` turns of content blocks; consecutive messages of
 *   one role in one turn (Converse wants user and assistant to alternate), tool messages as
 *   `toolResult` blocks in a user turn answering the `toolUse` blocks of the turn before (an id
 *   that answers none is a 400 here, naming the message)
 * - images: data URLs and http(s) URLs (downloaded through reelay's SSRF guard: Converse takes
 *   bytes or S3 locations only) → `image` blocks with their bytes; PDFs (`file.file_data`) →
 *   `document` blocks
 * - assistant `tool_calls` → `toolUse` blocks (arguments parsed); `thinking_blocks` given back →
 *   `reasoningContent` blocks first (their signature lets Claude continue a thinking turn)
 * - tools → `toolConfig.tools[].toolSpec` with `inputSchema.json`; tool_choice auto → auto,
 *   required → any, a function → tool; "none" offers no tools (Converse has no "none") unless the
 *   conversation already carries tool blocks, which need the toolConfig
 * - max_completion_tokens / max_tokens → inferenceConfig.maxTokens; temperature, top_p, stop →
 *   stopSequences; top_k and reasoning_effort (thinking, for Claude) → additionalModelRequestFields
 * Refused with a 400 naming the field: n > 1, logprobs, audio, file ids.
 */
import { PluginError, type ChatCompletionRequest, type ChatMessage, type ChatTool } from "@reelay/plugin-sdk";

type Block = Record<string, any>;
interface Turn { role: "user" | "assistant"; content: Block[] }

export interface TranslateOptions {
  thinking: "claude" | "off";
  reasoningBudgets: Record<string, number>;
  cachePrompt: boolean;
  additionalModelRequestFields?: Record<string, unknown>;
  /** an image URL's bytes (reelay's SSRF-guarded download) */
  fetchImage(url: string, param: string): Promise<{ mime: string; bytes: Uint8Array }>;
}

const refuse = (param: string, message: string) => new PluginError("invalid_request", message, { param, code: "unsupported_parameter" });
const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);
const FORMATS: Record<string, string> = { "image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp" };
const CACHE_POINT = { cachePoint: { type: "default" } };

/** The Converse input for a chat request (without modelId). */
export async function toConverseRequest(body: ChatCompletionRequest, o: TranslateOptions): Promise<Record<string, unknown>> {
  if (typeof body.n === "number" && body.n > 1) throw refuse("n", "This model answers one choice per request (n = 1).");
  if (body.logprobs === true) throw refuse("logprobs", "This model does not return log probabilities.");
  if (Array.isArray(body.modalities) && body.modalities.includes("audio")) throw refuse("modalities", "This model does not answer with audio.");
  const { system, turns, toolBlocks } = await conversation(body.messages, o);
  const request: Record<string, unknown> = { messages: turns };
  if (system.length) request.system = o.cachePrompt ? [...system, CACHE_POINT] : system;
  const toolConfig = toolConfigOf(body, toolBlocks, o.cachePrompt);
  if (toolConfig) request.toolConfig = toolConfig;
  const inference: Record<string, unknown> = {};
  const max = body.max_completion_tokens ?? body.max_tokens;
  if (typeof max === "number") inference.maxTokens = max;
  if (typeof body.temperature === "number") inference.temperature = body.temperature;
  if (typeof body.top_p === "number") inference.topP = body.top_p;
  const stop = typeof body.stop === "string" ? [body.stop] : Array.isArray(body.stop) ? body.stop : [];
  if (stop.length) inference.stopSequences = stop;
  if (Object.keys(inference).length) request.inferenceConfig = inference;
  const extra: Record<string, unknown> = { ...o.additionalModelRequestFields };
  if (typeof body.top_k === "number") extra.top_k = body.top_k;
  const budget = typeof body.reasoning_effort === "string" ? o.reasoningBudgets[body.reasoning_effort] : undefined;
  if (o.thinking === "claude" && budget !== undefined) {
    // Claude's minimum budget is 1,024 and it must stay below max_tokens
    const cut = typeof max === "number" ? Math.min(budget, max - 1) : budget;
    if (cut >= 1024) extra.thinking = { type: "enabled", budget_tokens: cut };
  }
  if (Object.keys(extra).length) request.additionalModelRequestFields = extra;
  return request;
}

async function conversation(messages: ChatMessage[], o: TranslateOptions): Promise<{ system: Block[]; turns: Turn[]; toolBlocks: boolean }> {
  if (!Array.isArray(messages) || messages.length === 0) throw refuse("messages", "messages must be a non-empty array.");
  const system: Block[] = [];
  const turns: Turn[] = [];
  let open = new Set<string>();
  let toolBlocks = false;
  const push = (role: Turn["role"], blocks: Block[]) => {
    if (!blocks.length) return;
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  for (const [i, m] of messages.entries()) {
    const at = `messages[${i}]`;
    switch (m?.role) {
      case "system":
      case "developer":
        for (const text of texts(m.content, `${at}.content`)) system.push({ text });
        break;
      case "user":
        push("user", await userBlocks(m.content, `${at}.content`, o));
        open = new Set();
        break;
      case "assistant": {
        const blocks = assistantBlocks(m as any, at);
        open = new Set(blocks.filter((b) => b.toolUse).map((b) => b.toolUse.toolUseId));
        if (open.size) toolBlocks = true;
        push("assistant", blocks);
        break;
      }
      case "tool": {
        const id = (m as { tool_call_id?: unknown }).tool_call_id;
        if (typeof id !== "string" || !open.has(id)) throw new PluginError("invalid_request", `${at} answers tool call ${JSON.stringify(id)}, which the assistant message before it did not make.`, { param: `${at}.tool_call_id` });
        open.delete(id);
        const text = typeof m.content === "string" ? m.content : texts(m.content, `${at}.content`).join("\n");
        push("user", [{ toolResult: { toolUseId: id, content: [{ text: text || "(empty)" }] } }]);
        break;
      }
      default:
        throw refuse(`${at}.role`, `${at} has role ${JSON.stringify((m as { role?: unknown })?.role)}; this model takes system, developer, user, assistant and tool messages.`);
    }
  }
  if (turns[0]?.role !== "user") throw refuse("messages", "The conversation must start with a user message (after any system messages).");
  return { system, turns, toolBlocks };
}

function texts(content: unknown, at: string): string[] {
  if (typeof content === "string") return content.trim() ? [content] : [];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw refuse(at, `${at} must be a string or an array of content parts.`);
  const out: string[] = [];
  for (const [j, p] of content.entries()) {
    if (p?.type === "text" && typeof p.text === "string") {
      if (p.text.trim()) out.push(p.text);
    } else if (p?.type === "refusal" && typeof p.refusal === "string") {
      if (p.refusal.trim()) out.push(p.refusal);
    } else throw refuse(`${at}[${j}]`, `${at}[${j}] is a ${JSON.stringify(p?.type)} part; only text is allowed here.`);
  }
  return out;
}

async function userBlocks(content: unknown, at: string, o: TranslateOptions): Promise<Block[]> {
  if (typeof content === "string") return content.trim() ? [{ text: content }] : [];
  if (!Array.isArray(content)) throw refuse(at, `${at} must be a string or an array of content parts.`);
  const blocks: Block[] = [];
  for (const [j, p] of content.entries()) {
    const here = `${at}[${j}]`;
    switch (p?.type) {
      case "text":
        if (typeof p.text !== "string") throw refuse(here, `${here}.text must be a string.`);
        if (p.text.trim()) blocks.push({ text: p.text });
        break;
      case "image_url": {
        const url = p.image_url?.url;
        const param = `${here}.image_url.url`;
        if (typeof url !== "string") throw refuse(param, `${param} must be a string.`);
        const image = dataUrl(url) ?? (/^https?:\/\//i.test(url) ? await o.fetchImage(url, param) : null);
        const format = image ? FORMATS[image.mime] : undefined;
        if (!image || !format) throw refuse(param, `${param} must be an http(s) URL or a base64 data URL of a PNG, JPEG, GIF or WebP image.`);
        blocks.push({ image: { format, source: { bytes: image.bytes } } });
        break;
      }
      case "file": {
        const data = typeof p.file?.file_data === "string" ? dataUrl(p.file.file_data) : null;
        if (!data || data.mime !== "application/pdf") throw refuse(here, `${here}: this model takes files as PDF data (file_data: "data:application/pdf;base64,…"), not file ids or other types.`);
        const name = String(p.file?.filename ?? `document-${j}`).replace(/[^A-Za-z0-9 ()[\]-]/g, "-").slice(0, 200);
        blocks.push({ document: { format: "pdf", name, source: { bytes: data.bytes } } });
        break;
      }
      default:
        throw refuse(here, `${here} is a ${JSON.stringify(p?.type)} part; this model takes text, images and PDF files.`);
    }
  }
  return blocks;
}

function dataUrl(url: string): { mime: string; bytes: Uint8Array } | null {
  const m = /^data:([\w.+-]+\/[\w.+-]+);base64,(.*)$/s.exec(url);
  return m ? { mime: m[1]!.toLowerCase(), bytes: Buffer.from(m[2]!, "base64") } : null;
}

function assistantBlocks(m: { content?: unknown; tool_calls?: unknown; thinking_blocks?: unknown; function_call?: unknown }, at: string): Block[] {
  if (m.function_call) throw refuse(`${at}.function_call`, `${at}.function_call (the deprecated single function call) is not taken; send tool_calls.`);
  const blocks: Block[] = [];
  for (const t of Array.isArray(m.thinking_blocks) ? m.thinking_blocks : []) {
    if (t?.type === "thinking" && typeof t.thinking === "string" && typeof t.signature === "string") blocks.push({ reasoningContent: { reasoningText: { text: t.thinking, signature: t.signature } } });
  }
  for (const text of texts(m.content, `${at}.content`)) blocks.push({ text });
  for (const [j, c] of (Array.isArray(m.tool_calls) ? m.tool_calls : []).entries()) {
    const here = `${at}.tool_calls[${j}]`;
    if (typeof c?.id !== "string" || typeof c.function?.name !== "string") throw refuse(here, `${here} must be a function call with an id and a name.`);
    let input: unknown;
    try {
      input = c.function.arguments ? JSON.parse(c.function.arguments) : {};
    } catch {
      throw new PluginError("invalid_request", `${here}.function.arguments is not JSON; this model takes tool arguments as a JSON object.`, { param: `${here}.function.arguments` });
    }
    if (!isObject(input)) throw new PluginError("invalid_request", `${here}.function.arguments must be a JSON object.`, { param: `${here}.function.arguments` });
    blocks.push({ toolUse: { toolUseId: c.id, name: c.function.name, input } });
  }
  return blocks;
}

const EMPTY_SCHEMA = { type: "object", properties: {} };

function toolConfigOf(body: ChatCompletionRequest, toolBlocks: boolean, cachePrompt: boolean): Record<string, unknown> | undefined {
  const list: ChatTool[] = Array.isArray(body.tools) ? body.tools : [];
  const choice = body.tool_choice;
  if (!list.length || (choice === "none" && !toolBlocks)) return undefined;
  const tools: Block[] = list.map((t, i) => {
    if (t?.type !== "function" || typeof t.function?.name !== "string") throw refuse(`tools[${i}]`, `tools[${i}] is not a function tool (this model takes function tools).`);
    return { toolSpec: { name: t.function.name, ...(t.function.description ? { description: t.function.description } : {}), inputSchema: { json: isObject(t.function.parameters) ? t.function.parameters : EMPTY_SCHEMA } } };
  });
  if (cachePrompt) tools.push(CACHE_POINT);
  let toolChoice: Record<string, unknown> | undefined;
  if (choice === "auto") toolChoice = { auto: {} };
  else if (choice === "required") toolChoice = { any: {} };
  else if (isObject(choice) && choice.type === "function" && typeof choice.function?.name === "string") toolChoice = { tool: { name: choice.function.name } };
  return { tools, ...(toolChoice ? { toolChoice } : {}) };
}
