/**
 * An Anthropic Messages request as the chat request every chat plugin serves: `system` → a system
 * message, content blocks → chat messages (an assistant's `tool_use` blocks → its `tool_calls`, a
 * user's `tool_result` blocks → `tool` messages before the rest of that user turn, images →
 * `image_url` parts), custom tools → function tools, `tool_choice` → its chat equivalent,
 * `stop_sequences` → `stop`, `metadata.user_id` → `user`, thinking → `reasoning_effort`.
 *
 * What a chat model cannot take is left out, never refused: earlier `thinking` blocks (a chat
 * upstream takes no reasoning back), `cache_control`, beta fields such as `context_management`,
 * and Anthropic's own tools (web search, code execution …), which are named for the
 * `x-reelay-omitted-tools` header and the request log. Only what the client *forces* (a
 * `tool_choice` naming such a tool) and what is malformed are a 400, naming the field.
 */
import { ApiError, badRequest, quoted } from "../../errors.ts";
import type { CountTokensRequest, MessagesRequest } from "./model.ts";

export interface ChatTranslation {
  /** the chat completion request (model: the name the client asked for; the chat pipeline resolves it) */
  chat: Record<string, unknown>;
  /** tools offered that no chat model can run, by name (left out of the request) */
  omittedTools: string[];
  /** the client's stop sequences, to tell `stop_sequence` from `end_turn` in the answer */
  stopSequences: string[];
}

type Block = Record<string, any>;
type ChatMessage = Record<string, unknown>;

const invalid = (message: string, param: string | null = null) => badRequest(message, param);
const present = (v: unknown) => v !== undefined && v !== null;
const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Blocks an assistant turn may carry that only mean something to Anthropic's servers (its own tools' calls and results). */
const SERVER_BLOCK = /^(server_tool_use|mcp_tool_use|mcp_tool_result|container_upload|[a-z_]+_tool_result)$/;

export function toChatRequest(body: (MessagesRequest | (CountTokensRequest & { max_tokens?: number })) & Record<string, unknown>): ChatTranslation {
  const chat: Record<string, unknown> = { model: body.model };
  const messages: ChatMessage[] = [];
  const system = [systemText(body.system, "system")];
  appendConversation(messages, system, body.messages);
  if (messages.length === 0) throw invalid("'messages' has nothing to send to the model: every turn is empty or holds only thinking blocks.", "messages");
  const prompt = system.filter((x) => x !== "").join("\n\n");
  chat.messages = prompt === "" ? messages : [{ role: "system", content: prompt }, ...messages];

  const b = body as Partial<MessagesRequest>;
  if (present(b.max_tokens)) chat.max_tokens = b.max_tokens;
  if (b.stream === true) chat.stream = true;
  const stopSequences = b.stop_sequences ?? [];
  if (stopSequences.length) chat.stop = stopSequences;
  for (const k of ["temperature", "top_p", "top_k"] as const) if (present(b[k])) chat[k] = b[k];
  if (typeof b.metadata?.user_id === "string" && b.metadata.user_id !== "") chat.user = b.metadata.user_id;

  const { functions, omitted } = chatTools(body.tools);
  if (functions.length) chat.tools = functions;
  const choice = toolChoice(body.tool_choice, functions, omitted);
  if (choice.tool_choice !== undefined) chat.tool_choice = choice.tool_choice;
  if (choice.parallel !== undefined) chat.parallel_tool_calls = choice.parallel;

  const effort = reasoningEffort(body.thinking, b.output_config);
  if (effort) chat.reasoning_effort = effort;
  return { chat, omittedTools: omitted, stopSequences };
}

/** `system`: a string, or text blocks (their `cache_control` accepted and not sent), joined by new lines. */
function systemText(system: unknown, at: string): string {
  if (!present(system)) return "";
  if (typeof system === "string") return system;
  if (!Array.isArray(system)) throw invalid(`'${at}' must be a string or an array of text blocks.`, at);
  return system.map((block, i) => {
    if (!isObject(block) || block.type !== "text" || typeof block.text !== "string") throw invalid(`'${at}[${i}]' must be a text block {type: "text", text}.`, `${at}[${i}]`);
    return block.text;
  }).join("\n");
}

/**
 * The turns as chat messages, Anthropic's way: consecutive turns of one role are one turn, and a
 * `system` turn (Claude Code's mid-conversation system beta) joins the system prompt — chat
 * templates of open models take one system message, first, and alternating roles.
 */
function appendConversation(out: ChatMessage[], system: string[], messages: unknown[]): void {
  /** the tool_use ids of the latest assistant turn: what the next user turn's tool_result blocks may answer */
  let openCalls = new Set<string>();
  messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!isObject(m)) throw invalid(`'${at}' must be an object {role, content}.`, at);
    if (typeof m.content !== "string" && !Array.isArray(m.content)) throw invalid(`'${at}.content' must be a string or an array of content blocks.`, `${at}.content`);
    switch (m.role) {
      case "user":
        appendUserTurn(out, m.content, `${at}.content`, openCalls);
        openCalls = new Set();
        return;
      case "assistant":
        openCalls = appendAssistantTurn(out, m.content, `${at}.content`);
        return;
      case "system":
        system.push(systemText(m.content, `${at}.content`));
        return;
      default:
        throw invalid(`'${at}.role' must be 'user' or 'assistant' (got ${typeof m.role === "string" ? `'${quoted(m.role, 40)}'` : JSON.stringify(m.role ?? null).slice(0, 40)}).`, `${at}.role`);
    }
  });
}

/** An assistant turn: its text and its tool calls in one chat message; thinking and Anthropic's server-side blocks are dropped. */
function appendAssistantTurn(out: ChatMessage[], content: string | unknown[], at: string): Set<string> {
  let text = typeof content === "string" ? content : "";
  const blocks = typeof content === "string" ? [] : content;
  const calls: Record<string, unknown>[] = [];
  blocks.forEach((block, j) => {
    const where = `${at}[${j}]`;
    if (!isObject(block)) throw invalid(`'${where}' must be a content block object.`, where);
    switch (block.type) {
      case "text":
        if (typeof block.text !== "string") throw invalid(`'${where}.text' must be a string.`, `${where}.text`);
        text += block.text;
        return;
      case "tool_use": {
        if (typeof block.id !== "string" || block.id === "") throw invalid(`'${where}.id' must be a non-empty string.`, `${where}.id`);
        if (typeof block.name !== "string" || block.name === "") throw invalid(`'${where}.name' must be a non-empty string.`, `${where}.name`);
        if (present(block.input) && !isObject(block.input)) throw invalid(`'${where}.input' must be an object.`, `${where}.input`);
        calls.push({ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
        return;
      }
      case "thinking":
      case "redacted_thinking":
        return; // a chat upstream takes no reasoning back (and its signature means nothing to it)
      default:
        if (typeof block.type === "string" && SERVER_BLOCK.test(block.type)) return; // the call or result of a tool Anthropic's servers ran
        throw unknownBlock(block.type, where, "text, tool_use, thinking and redacted_thinking");
    }
  });
  const prev = out.at(-1);
  if (prev?.role === "assistant") {
    // a turn continuing the one before (an assistant prefill split in two): one message
    if (text !== "") prev.content = typeof prev.content === "string" ? prev.content + text : text;
    if (calls.length) prev.tool_calls = [...((prev.tool_calls as unknown[] | undefined) ?? []), ...calls];
    return new Set(((prev.tool_calls as Array<{ id: string }> | undefined) ?? []).map((c) => c.id));
  }
  if (calls.length) out.push({ role: "assistant", content: text === "" ? null : text, tool_calls: calls });
  else if (text !== "") out.push({ role: "assistant", content: text });
  return new Set(calls.map((c) => c.id as string));
}

/**
 * A user turn: its tool results first, as `tool` messages (a chat upstream wants them right after
 * the assistant's calls), then the rest as one user message — the images tool results returned
 * included, since a chat `tool` message carries text only.
 */
function appendUserTurn(out: ChatMessage[], content: string | unknown[], at: string, openCalls: Set<string>): void {
  if (typeof content === "string") return pushUser(out, content);
  const parts: Record<string, unknown>[] = [];
  const resultImages: Record<string, unknown>[] = [];
  content.forEach((block, j) => {
    const where = `${at}[${j}]`;
    if (!isObject(block)) throw invalid(`'${where}' must be a content block object.`, where);
    switch (block.type) {
      case "text":
        if (typeof block.text !== "string") throw invalid(`'${where}.text' must be a string.`, `${where}.text`);
        parts.push({ type: "text", text: block.text });
        return;
      case "image":
        parts.push(imagePart(block, where));
        return;
      case "document":
        parts.push(documentPart(block, where));
        return;
      case "tool_result": {
        const id = block.tool_use_id;
        if (typeof id !== "string" || id === "") throw invalid(`'${where}.tool_use_id' must be a non-empty string.`, `${where}.tool_use_id`);
        if (!openCalls.has(id)) {
          throw invalid(`'${where}.tool_use_id': unexpected tool_use_id '${quoted(id, 64)}' in tool_result block; each tool_result must answer a tool_use block of the previous assistant message.`, `${where}.tool_use_id`);
        }
        const result = toolResult(block, where);
        out.push({ role: "tool", tool_call_id: id, content: result.text });
        resultImages.push(...result.images);
        return;
      }
      default:
        throw unknownBlock(block.type, where, "text, image, document and tool_result");
    }
  });
  const all = [...resultImages, ...parts];
  if (all.length === 0) return;
  // text only stays a plain string: what every chat server reads (some read nothing else)
  pushUser(out, all.every((p) => p.type === "text") ? all.map((p) => p.text as string).join("\n") : all);
}

/** A user message, joined to the one before when that is a user message too. */
function pushUser(out: ChatMessage[], content: string | Record<string, unknown>[]): void {
  const prev = out.at(-1);
  if (prev?.role !== "user") return void out.push({ role: "user", content });
  const parts = (c: unknown) => (typeof c === "string" ? [{ type: "text", text: c }] : (c as Record<string, unknown>[]));
  prev.content = typeof prev.content === "string" && typeof content === "string" ? `${prev.content}\n${content}` : [...parts(prev.content), ...parts(content)];
}

function toolResult(block: Block, where: string): { text: string; images: Record<string, unknown>[] } {
  const c = block.content;
  let text = "";
  const images: Record<string, unknown>[] = [];
  if (typeof c === "string") text = c;
  else if (Array.isArray(c)) {
    const texts: string[] = [];
    c.forEach((part, k) => {
      const at = `${where}.content[${k}]`;
      if (!isObject(part)) throw invalid(`'${at}' must be a content block object.`, at);
      if (part.type === "text" && typeof part.text === "string") texts.push(part.text);
      else if (part.type === "image") images.push(imagePart(part, at));
      else if (part.type === "document") texts.push(String(documentPart(part, at).text));
      else throw unknownBlock(part.type, at, "text, image and document");
    });
    text = texts.join("\n");
  } else if (present(c)) throw invalid(`'${where}.content' must be a string or an array of text and image blocks.`, `${where}.content`);
  // a chat tool message has no error flag: the model reads it in the text, as Anthropic's models are told it
  if (block.is_error === true) text = text === "" ? "Error" : `Error: ${text}`;
  return { text, images };
}

const MEDIA_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

function imagePart(block: Block, where: string): Record<string, unknown> {
  const s = block.source;
  if (isObject(s) && s.type === "base64") {
    if (!MEDIA_TYPES.has(s.media_type)) throw invalid(`'${where}.source.media_type' must be one of ${[...MEDIA_TYPES].join(", ")}.`, `${where}.source.media_type`);
    if (typeof s.data !== "string" || s.data === "") throw invalid(`'${where}.source.data' must be base64 image data.`, `${where}.source.data`);
    return { type: "image_url", image_url: { url: `data:${s.media_type};base64,${s.data}` } };
  }
  if (isObject(s) && s.type === "url") {
    if (typeof s.url !== "string" || !/^https?:\/\//i.test(s.url)) throw invalid(`'${where}.source.url' must be an http(s) URL.`, `${where}.source.url`);
    return { type: "image_url", image_url: { url: s.url } };
  }
  if (isObject(s) && s.type === "file") throw invalid(`'${where}.source': reelay has no Files API; send the image as base64 or a URL.`, `${where}.source`);
  throw invalid(`'${where}.source' must be {type: "base64", media_type, data} or {type: "url", url}.`, `${where}.source`);
}

/** A document block with a plain-text source becomes text; PDFs and files cannot be sent to a chat model. */
function documentPart(block: Block, where: string): { type: "text"; text: string } {
  const s = block.source;
  if (isObject(s) && s.type === "text" && typeof s.data === "string") return { type: "text", text: typeof block.title === "string" ? `${block.title}\n${s.data}` : s.data };
  if (isObject(s) && s.type === "content" && Array.isArray(s.content)) {
    return { type: "text", text: s.content.map((p: unknown) => (isObject(p) && p.type === "text" && typeof p.text === "string" ? p.text : "")).join("\n") };
  }
  throw invalid(`'${where}.source': documents are accepted as plain text ({type: "text", media_type: "text/plain", data}); chat models behind reelay read no PDFs or files.`, `${where}.source`);
}

function unknownBlock(type: unknown, where: string, expected: string): ApiError {
  const name = typeof type === "string" ? `'${quoted(type, 64)}'` : "missing";
  return invalid(`'${where}.type' is ${name}: this turn takes ${expected} blocks.`, `${where}.type`);
}

/**
 * Custom tools (no `type`, or `type: "custom"`) become function tools. A tool with any other type
 * is one of Anthropic's own (`web_search_20250305`, `bash_20250124`, `code_execution_…`), which a
 * chat model cannot run or does not know: left out, and named.
 */
function chatTools(tools: unknown[] | null | undefined): { functions: Record<string, unknown>[]; omitted: string[] } {
  const functions: Record<string, unknown>[] = [];
  const omitted: string[] = [];
  (tools ?? []).forEach((tool, i) => {
    const at = `tools[${i}]`;
    if (!isObject(tool)) throw invalid(`'${at}' must be a tool object.`, at);
    if (present(tool.type) && tool.type !== "custom") {
      if (typeof tool.type !== "string") throw invalid(`'${at}.type' must be a string.`, `${at}.type`);
      omitted.push(typeof tool.name === "string" && tool.name !== "" ? tool.name : tool.type);
      return;
    }
    if (typeof tool.name !== "string" || !/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name)) throw invalid(`'${at}.name' must be 1 to 128 letters, digits, '_' or '-'.`, `${at}.name`);
    if (!isObject(tool.input_schema)) throw invalid(`'${at}.input_schema' must be a JSON schema object.`, `${at}.input_schema`);
    const fn: Record<string, unknown> = { name: tool.name };
    if (typeof tool.description === "string") fn.description = tool.description;
    fn.parameters = tool.input_schema;
    if (typeof tool.strict === "boolean") fn.strict = tool.strict;
    functions.push({ type: "function", function: fn });
  });
  return { functions, omitted };
}

/** Anthropic's tool_choice as chat's; forcing a tool that is not offered (or was left out) is the one refusal. */
function toolChoice(choice: unknown, functions: Record<string, unknown>[], omitted: string[]): { tool_choice?: unknown; parallel?: boolean } {
  if (!present(choice)) return {};
  if (!isObject(choice)) throw invalid("'tool_choice' must be an object {type: \"auto\" | \"any\" | \"tool\" | \"none\"}.", "tool_choice");
  const parallel = choice.disable_parallel_tool_use === true && functions.length ? false : undefined;
  const names = functions.map((f) => (f.function as { name: string }).name);
  switch (choice.type) {
    case "auto":
      return functions.length ? { tool_choice: "auto", parallel } : {};
    case "none":
      return functions.length ? { tool_choice: "none" } : {};
    case "any":
      if (!functions.length) {
        throw invalid(omitted.length
          ? `'tool_choice' is 'any' but the only tools offered (${omitted.join(", ")}) are run by Anthropic's servers, which reelay's models cannot use.`
          : "'tool_choice' is 'any' but no tools were offered.", "tool_choice");
      }
      return { tool_choice: "required", parallel };
    case "tool": {
      const name = choice.name;
      if (typeof name !== "string" || name === "") throw invalid("'tool_choice.name' must name one of the tools offered.", "tool_choice.name");
      if (omitted.includes(name)) throw invalid(`'tool_choice' forces the tool '${quoted(name, 64)}', which is run by Anthropic's servers; reelay's models cannot use it.`, "tool_choice.name");
      if (!names.includes(name)) throw invalid(`'tool_choice.name': no tool named '${quoted(name, 64)}' was offered.`, "tool_choice.name");
      return { tool_choice: { type: "function", function: { name } }, parallel };
    }
    default:
      throw invalid("'tool_choice.type' must be 'auto', 'any', 'tool' or 'none'.", "tool_choice.type");
  }
}

const EFFORTS: Record<string, string> = { low: "low", medium: "medium", high: "high", xhigh: "high", max: "high" };

/**
 * `reasoning_effort` only for `thinking: {type: "enabled"}`, the client's demand for reasoning:
 * the effort it names (`output_config.effort`), else one matching its budget. `adaptive` (Claude
 * Code's default: the model decides) and `disabled` send nothing, so a model without reasoning
 * (which may refuse the parameter) still answers; the effort is then the model's own default.
 */
function reasoningEffort(thinking: unknown, output: { effort?: string | null } | null | undefined): string | null {
  const effort = output?.effort;
  if (present(effort) && !(effort! in EFFORTS)) throw invalid(`'output_config.effort' must be one of ${Object.keys(EFFORTS).join(", ")}.`, "output_config.effort");
  if (!present(thinking)) return null;
  if (!isObject(thinking)) throw invalid("'thinking' must be an object {type: \"enabled\" | \"adaptive\" | \"disabled\"}.", "thinking");
  switch (thinking.type) {
    case "adaptive":
    case "disabled":
      return null;
    case "enabled": {
      const budget = thinking.budget_tokens;
      if (!Number.isSafeInteger(budget) || budget < 1) throw invalid("'thinking.budget_tokens' must be a positive integer.", "thinking.budget_tokens");
      if (present(effort)) return EFFORTS[effort!]!;
      return budget < 4_096 ? "low" : budget < 16_384 ? "medium" : "high";
    }
    default:
      throw invalid("'thinking.type' must be 'enabled', 'adaptive' or 'disabled'.", "thinking.type");
  }
}

/** The Messages field a chat parameter came from, for errors the model's plugin reports in chat terms. */
const PARAM_FROM_CHAT: Array<[RegExp, string]> = [
  [/^messages(\[|\.|$)/, "messages"],
  [/^(max_tokens|max_completion_tokens)$/, "max_tokens"],
  [/^stop$/, "stop_sequences"],
  [/^reasoning_effort$/, "thinking"],
  [/^user$/, "metadata.user_id"],
  [/^parallel_tool_calls$/, "tool_choice.disable_parallel_tool_use"],
];

export function messagesError(err: unknown): unknown {
  if (!(err instanceof ApiError) || !err.param) return err;
  const hit = PARAM_FROM_CHAT.find(([re]) => re.test(err.param!));
  if (!hit) return err;
  return new ApiError(err.status, err.type, `${err.message} (Messages field '${hit[1]}'; sent to the model as the chat parameter '${err.param}'.)`, { code: err.code, param: hit[1], headers: err.headers, cause: err });
}
