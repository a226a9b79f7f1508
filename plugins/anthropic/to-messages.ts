/**
 * An OpenAI chat request → an Anthropic Messages request.
 *
 * - system and developer messages → `system` text blocks, in order (Anthropic has one system prompt)
 * - user / assistant / tool messages → turns of content blocks; consecutive messages of one role
 *   are one turn, and a tool message is a `tool_result` block in a user turn, answering a
 *   `tool_use` of the assistant turn before it (an id that answers none is a 400 here, naming the
 *   message, rather than Anthropic's)
 * - images: data URLs → base64 `image` blocks, http(s) URLs → `url` image blocks; PDFs given as
 *   file data → `document` blocks; audio and file ids are refused (400)
 * - assistant `tool_calls` → `tool_use` blocks (arguments parsed: Anthropic takes an object),
 *   `thinking_blocks` given back by a client → `thinking` / `redacted_thinking` blocks first (they
 *   carry the signature Anthropic needs to continue a thinking turn that used tools)
 * - tools, tool_choice (auto / none / required → any / a function → tool), parallel_tool_calls
 *   false → disable_parallel_tool_use; a custom (free-form) tool is a tool taking one string `input`
 * - max_tokens: max_completion_tokens ?? max_tokens (the host clamped both) ?? the model's default
 * - stop → stop_sequences, temperature, top_p, top_k, user → metadata.user_id, response_format
 *   json_schema / json_object → output_config.format
 * - reasoning_effort → thinking with the configured budget (kept below max_tokens); a client's own
 *   `thinking` object wins
 * What Anthropic has no equivalent for and a client merely tunes (seed, penalties, logit_bias,
 * OpenAI's store metadata …) is left out: Anthropic refuses unknown fields. What the client would
 * miss in the answer (n > 1, logprobs, audio) is a 400 naming the field.
 */
import { PluginError, type ChatCompletionRequest, type ChatMessage, type ChatTool, type MessagesContentBlock } from "@reelay/plugin-sdk";

export interface TranslateOptions {
  /** the upstream's model name */
  model: string;
  /** max_tokens when the request gives none */
  defaultMaxTokens: number;
  reasoningBudgets: Record<string, number>;
}

type Turn = { role: "user" | "assistant"; content: MessagesContentBlock[] };

const refuse = (param: string, message: string) => new PluginError("invalid_request", message, { param, code: "unsupported_parameter" });
const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The Messages body for a chat request (without `stream`); the names of its custom tools, whose calls are answered as custom tool calls. */
export function toMessagesRequest(body: ChatCompletionRequest, o: TranslateOptions): { request: Record<string, unknown>; customTools: Set<string> } {
  if (typeof body.n === "number" && body.n > 1) throw refuse("n", "This model answers one choice per request (n = 1).");
  if (body.logprobs === true) throw refuse("logprobs", "This model does not return log probabilities.");
  if (Array.isArray(body.modalities) && body.modalities.includes("audio")) throw refuse("modalities", "This model does not answer with audio.");
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? o.defaultMaxTokens;
  const { system, turns } = conversation(body.messages);
  const { tools, toolChoice, customTools } = toolsOf(body);
  const request: Record<string, unknown> = { model: o.model, max_tokens: maxTokens, messages: turns };
  if (system.length) request.system = system;
  if (tools) request.tools = tools;
  if (toolChoice) request.tool_choice = toolChoice;
  const stop = typeof body.stop === "string" ? [body.stop] : Array.isArray(body.stop) ? body.stop : [];
  if (stop.length) request.stop_sequences = stop;
  for (const k of ["temperature", "top_p", "top_k"] as const) if (typeof body[k] === "number") request[k] = body[k];
  if (typeof body.user === "string" && body.user) request.metadata = { user_id: body.user };
  const format = outputFormat(body.response_format);
  const outputConfig = { ...(isObject(body.output_config) ? body.output_config : {}), ...(format ? { format } : {}) };
  if (Object.keys(outputConfig).length) request.output_config = outputConfig;
  const thinking = isObject(body.thinking) ? body.thinking : thinkingFor(body.reasoning_effort, maxTokens, o.reasoningBudgets);
  if (thinking) request.thinking = thinking;
  return { request, customTools };
}

function conversation(messages: ChatMessage[]): { system: MessagesContentBlock[]; turns: Turn[] } {
  if (!Array.isArray(messages) || messages.length === 0) throw refuse("messages", "messages must be a non-empty array.");
  const system: MessagesContentBlock[] = [];
  const turns: Turn[] = [];
  /** tool_use ids of the last assistant turn not yet answered */
  let open = new Set<string>();
  const push = (role: Turn["role"], blocks: MessagesContentBlock[]) => {
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
        for (const text of texts(m.content, `${at}.content`)) system.push({ type: "text", text });
        break;
      case "user":
        push("user", userBlocks(m.content, `${at}.content`));
        open = new Set();
        break;
      case "assistant": {
        const blocks = assistantBlocks(m as any, at);
        open = new Set(blocks.filter((b) => b.type === "tool_use").map((b) => b.id as string));
        push("assistant", blocks);
        break;
      }
      case "tool": {
        const id = (m as { tool_call_id?: unknown }).tool_call_id;
        if (typeof id !== "string" || !open.has(id)) {
          throw new PluginError("invalid_request", `${at} answers tool call ${JSON.stringify(id)}, which the assistant message before it did not make (each tool message answers one tool call of the assistant message just before it).`, { param: `${at}.tool_call_id` });
        }
        open.delete(id);
        const content = typeof m.content === "string" ? m.content : texts(m.content, `${at}.content`).map((text) => ({ type: "text", text }));
        push("user", [{ type: "tool_result", tool_use_id: id, content }]);
        break;
      }
      default:
        throw refuse(`${at}.role`, `${at} has role ${JSON.stringify((m as { role?: unknown })?.role)}; this model takes system, developer, user, assistant and tool messages.`);
    }
  }
  return { system, turns };
}

/** The non-empty texts of string or text-part content (Anthropic refuses empty text blocks). */
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

function userBlocks(content: unknown, at: string): MessagesContentBlock[] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  if (!Array.isArray(content)) throw refuse(at, `${at} must be a string or an array of content parts.`);
  const blocks: MessagesContentBlock[] = [];
  for (const [j, p] of content.entries()) {
    const here = `${at}[${j}]`;
    switch (p?.type) {
      case "text":
        if (typeof p.text !== "string") throw refuse(here, `${here}.text must be a string.`);
        if (p.text) blocks.push({ type: "text", text: p.text });
        break;
      case "image_url":
        blocks.push(imageBlock(p.image_url?.url, here));
        break;
      case "file": {
        const data = p.file?.file_data;
        const parsed = typeof data === "string" ? dataUrl(data) : null;
        if (!parsed || parsed.mime !== "application/pdf") throw refuse(here, `${here}: this model takes files as PDF data (file_data: "data:application/pdf;base64,…"), not file ids or other types.`);
        blocks.push({ type: "document", source: { type: "base64", media_type: parsed.mime, data: parsed.data } });
        break;
      }
      default:
        throw refuse(here, `${here} is a ${JSON.stringify(p?.type)} part; this model takes text, images and PDF files.`);
    }
  }
  return blocks;
}

const IMAGE_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

function imageBlock(url: unknown, at: string): MessagesContentBlock {
  if (typeof url !== "string") throw refuse(`${at}.image_url.url`, `${at}.image_url.url must be a string.`);
  if (/^https?:\/\//i.test(url)) return { type: "image", source: { type: "url", url } };
  const parsed = dataUrl(url);
  if (!parsed || !IMAGE_TYPES.has(parsed.mime)) throw refuse(`${at}.image_url.url`, `${at}.image_url.url must be an http(s) URL or a base64 data URL of a JPEG, PNG, GIF or WebP image.`);
  return { type: "image", source: { type: "base64", media_type: parsed.mime, data: parsed.data } };
}

function dataUrl(url: string): { mime: string; data: string } | null {
  const m = /^data:([\w.+-]+\/[\w.+-]+);base64,(.*)$/s.exec(url);
  return m ? { mime: m[1]!.toLowerCase(), data: m[2]! } : null;
}

function assistantBlocks(m: { content?: unknown; tool_calls?: unknown; thinking_blocks?: unknown; function_call?: unknown }, at: string): MessagesContentBlock[] {
  if (m.function_call) throw refuse(`${at}.function_call`, `${at}.function_call (the deprecated single function call) is not taken; send tool_calls.`);
  const blocks: MessagesContentBlock[] = [];
  if (Array.isArray(m.thinking_blocks)) {
    for (const t of m.thinking_blocks) {
      if (t?.type === "thinking" && typeof t.thinking === "string" && typeof t.signature === "string") blocks.push({ type: "thinking", thinking: t.thinking, signature: t.signature });
      else if (t?.type === "redacted_thinking" && typeof t.data === "string") blocks.push({ type: "redacted_thinking", data: t.data });
    }
  }
  for (const text of texts(m.content, `${at}.content`)) blocks.push({ type: "text", text });
  for (const [j, c] of (Array.isArray(m.tool_calls) ? m.tool_calls : []).entries()) {
    const here = `${at}.tool_calls[${j}]`;
    if (typeof c?.id !== "string") throw refuse(`${here}.id`, `${here}.id must be a string.`);
    if (c.type === "custom") {
      blocks.push({ type: "tool_use", id: c.id, name: c.custom?.name, input: { input: String(c.custom?.input ?? "") } });
      continue;
    }
    let input: unknown;
    try {
      input = c.function?.arguments ? JSON.parse(c.function.arguments) : {};
    } catch {
      throw new PluginError("invalid_request", `${here}.function.arguments is not JSON; this model takes tool arguments as a JSON object.`, { param: `${here}.function.arguments` });
    }
    if (!isObject(input)) throw new PluginError("invalid_request", `${here}.function.arguments must be a JSON object.`, { param: `${here}.function.arguments` });
    blocks.push({ type: "tool_use", id: c.id, name: c.function?.name, input });
  }
  return blocks;
}

const EMPTY_SCHEMA = { type: "object", properties: {} };
const CUSTOM_INPUT_SCHEMA = { type: "object", properties: { input: { type: "string", description: "the tool's free-form input" } }, required: ["input"] };

function toolsOf(body: ChatCompletionRequest): { tools?: unknown[]; toolChoice?: Record<string, unknown>; customTools: Set<string> } {
  const customTools = new Set<string>();
  let list: ChatTool[] = Array.isArray(body.tools) ? body.tools : [];
  let choice = body.tool_choice;
  if (isObject(choice) && choice.type === "allowed_tools") {
    // OpenAI's allowed_tools: offer only those, in its mode
    const allowed = isObject(choice.allowed_tools) ? choice.allowed_tools : {};
    const names = new Set((Array.isArray(allowed.tools) ? allowed.tools : []).map((t: any) => t?.function?.name ?? t?.custom?.name ?? t?.name));
    list = list.filter((t) => names.has(t.type === "custom" ? t.custom.name : t.function.name));
    choice = allowed.mode === "required" ? "required" : "auto";
  }
  if (!list.length) return { customTools };
  const tools = list.map((t, i) => {
    if (t?.type === "custom") {
      customTools.add(t.custom.name);
      return { name: t.custom.name, ...(t.custom.description ? { description: t.custom.description } : {}), input_schema: CUSTOM_INPUT_SCHEMA };
    }
    if (t?.type !== "function" || typeof t.function?.name !== "string") throw refuse(`tools[${i}]`, `tools[${i}] is not a function or custom tool.`);
    return { name: t.function.name, ...(t.function.description ? { description: t.function.description } : {}), input_schema: isObject(t.function.parameters) ? t.function.parameters : EMPTY_SCHEMA };
  });
  let toolChoice: Record<string, unknown> | undefined;
  if (choice === "none") toolChoice = { type: "none" };
  else if (choice === "required") toolChoice = { type: "any" };
  else if (isObject(choice) && (choice.type === "function" || choice.type === "custom")) toolChoice = { type: "tool", name: choice.type === "function" ? choice.function?.name : choice.custom?.name };
  else if (choice === "auto" || body.parallel_tool_calls === false) toolChoice = { type: "auto" };
  if (body.parallel_tool_calls === false && toolChoice && toolChoice.type !== "none") toolChoice.disable_parallel_tool_use = true;
  return { tools, toolChoice, customTools };
}

function outputFormat(rf: ChatCompletionRequest["response_format"]): Record<string, unknown> | undefined {
  if (!isObject(rf)) return undefined;
  if (rf.type === "json_schema" && isObject(rf.json_schema) && isObject(rf.json_schema.schema)) return { type: "json_schema", schema: rf.json_schema.schema };
  if (rf.type === "json_object") return { type: "json_schema", schema: { type: "object" } };
  return undefined;
}

/** Anthropic's thinking for an OpenAI reasoning effort: the configured budget, below max_tokens, at least Anthropic's 1,024. */
function thinkingFor(effort: unknown, maxTokens: number, budgets: Record<string, number>): Record<string, unknown> | undefined {
  if (typeof effort !== "string" || !(effort in budgets)) return undefined;
  const budget = Math.min(budgets[effort]!, maxTokens - 1);
  return budget >= 1024 ? { type: "enabled", budget_tokens: budget } : undefined;
}
