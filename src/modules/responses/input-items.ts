/**
 * The Responses API's `input`, checked and put into one shape: a string becomes one user message,
 * message content given as a string becomes one text part, and every item is checked with a message
 * naming its place (`input[2].content[0].image_url`). What a chat model cannot be sent is refused
 * here, before any credit is held.
 */
import { badRequest } from "../../errors.ts";

export type ContentPart =
  | { type: "input_text"; text: string }
  | { type: "output_text"; text: string; annotations?: unknown[]; logprobs?: unknown[] }
  | { type: "refusal"; refusal: string }
  | { type: "input_image"; image_url: string; detail?: string }
  | { type: "input_audio"; input_audio: { data: string; format: string } };

export type Role = "user" | "system" | "developer" | "assistant";

export type InputItem =
  | { type: "message"; id?: string; role: Role; content: ContentPart[]; status?: string }
  | { type: "function_call"; id?: string; call_id: string; name: string; namespace?: string; arguments: string; status?: string }
  | { type: "function_call_output"; id?: string; call_id: string; output: string | ContentPart[]; status?: string }
  | { type: "custom_tool_call"; id?: string; call_id: string; name: string; namespace?: string; input: string; status?: string }
  | { type: "custom_tool_call_output"; id?: string; call_id: string; output: string | ContentPart[] }
  | { type: "reasoning"; id?: string; summary: unknown[]; content?: unknown[]; encrypted_content?: string | null; status?: string }
  | { type: "item_reference"; id: string }
  /** more tools offered from here on (Codex sends its tool groups this way for OpenAI's newest models): offered to the model, not a message */
  | { type: "additional_tools"; id?: string; tools: unknown[] };

const ROLES = new Set<string>(["user", "system", "developer", "assistant"]);
const unsupported = (message: string, param: string) => badRequest(message, param, "unsupported_parameter");
const str = (v: unknown, param: string, what = "a string"): string => {
  if (typeof v !== "string") throw badRequest(`'${param}' must be ${what}.`, param);
  return v;
};
const optId = (v: unknown, param: string) => (v === undefined || v === null ? undefined : str(v, param));

export function normalizeInput(input: string | object[] | undefined): InputItem[] {
  if (input === undefined) return [];
  if (typeof input === "string") return [{ type: "message", role: "user", content: [{ type: "input_text", text: input }] }];
  return input.map((raw, i) => item(raw as Record<string, unknown>, `input[${i}]`));
}

function item(raw: Record<string, unknown>, at: string): InputItem {
  const type = raw.type ?? (raw.role !== undefined ? "message" : undefined);
  switch (type) {
    case "message": {
      const role = raw.role;
      if (typeof role !== "string" || !ROLES.has(role)) throw badRequest(`'${at}.role' must be one of user, system, developer, assistant.`, `${at}.role`);
      return { type: "message", id: optId(raw.id, `${at}.id`), role: role as Role, content: content(raw.content, `${at}.content`, role === "assistant"), ...(typeof raw.status === "string" ? { status: raw.status } : {}) };
    }
    case "function_call":
      return {
        type: "function_call", id: optId(raw.id, `${at}.id`), call_id: str(raw.call_id, `${at}.call_id`), name: str(raw.name, `${at}.name`),
        ...namespaceOf(raw, at), arguments: str(raw.arguments, `${at}.arguments`, "a string (JSON text)"), ...(typeof raw.status === "string" ? { status: raw.status } : {}),
      };
    case "custom_tool_call":
      return {
        type: "custom_tool_call", id: optId(raw.id, `${at}.id`), call_id: str(raw.call_id, `${at}.call_id`), name: str(raw.name, `${at}.name`),
        ...namespaceOf(raw, at), input: str(raw.input, `${at}.input`), ...(typeof raw.status === "string" ? { status: raw.status } : {}),
      };
    case "function_call_output":
    case "custom_tool_call_output":
      return { type: type === "function_call_output" ? type : "custom_tool_call_output", id: optId(raw.id, `${at}.id`), call_id: str(raw.call_id, `${at}.call_id`), output: toolOutput(raw.output, `${at}.output`) };
    case "reasoning":
      // kept as sent; only reelay's own sealed encrypted_content goes back to the model (to-chat.ts)
      return { type: "reasoning", id: optId(raw.id, `${at}.id`), summary: Array.isArray(raw.summary) ? raw.summary : [], ...(Array.isArray(raw.content) ? { content: raw.content } : {}), ...(typeof raw.encrypted_content === "string" ? { encrypted_content: raw.encrypted_content } : {}) };
    case "item_reference":
      return { type: "item_reference", id: str(raw.id, `${at}.id`) };
    case "additional_tools":
      if (!Array.isArray(raw.tools)) throw badRequest(`'${at}.tools' must be an array of tools.`, `${at}.tools`);
      return { type: "additional_tools", id: optId(raw.id, `${at}.id`), tools: raw.tools };
    default:
      if (typeof type !== "string") throw badRequest(`'${at}' must be an input item: a message ({role, content}) or an item with a 'type'.`, `${at}.type`);
      throw unsupported(
        `'${at}.type' is '${type.slice(0, 64)}': reelay serves chat models and accepts messages, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning, additional_tools and item_reference items (tools OpenAI runs itself are not available).`,
        `${at}.type`,
      );
  }
}

function namespaceOf(raw: Record<string, unknown>, at: string): { namespace?: string } {
  return raw.namespace === undefined || raw.namespace === null ? {} : { namespace: str(raw.namespace, `${at}.namespace`) };
}

/** A tool's output: text, or text and images (an image goes to the model in a user message after the tool results, to-chat.ts). */
function toolOutput(raw: unknown, at: string): string | ContentPart[] {
  if (typeof raw === "string") return raw;
  if (!Array.isArray(raw)) throw badRequest(`'${at}' must be a string or an array of content parts.`, at);
  const parts = content(raw, at, false);
  parts.forEach((p, j) => {
    if (p.type !== "input_text" && p.type !== "input_image") throw unsupported(`'${at}[${j}]': a tool's output can be text and images for chat models; got '${p.type}'.`, `${at}[${j}]`);
  });
  return parts;
}

function content(raw: unknown, at: string, assistant: boolean): ContentPart[] {
  if (typeof raw === "string") return [assistant ? { type: "output_text", text: raw, annotations: [] } : { type: "input_text", text: raw }];
  if (!Array.isArray(raw)) throw badRequest(`'${at}' must be a string or an array of content parts.`, at);
  return raw.map((p: any, j): ContentPart => {
    const where = `${at}[${j}]`;
    switch (p?.type) {
      case "input_text":
        return { type: "input_text", text: str(p.text, `${where}.text`) };
      case "output_text":
        return { type: "output_text", text: str(p.text, `${where}.text`), annotations: Array.isArray(p.annotations) ? p.annotations : [] };
      case "refusal":
        return { type: "refusal", refusal: str(p.refusal, `${where}.refusal`) };
      case "input_image":
        if (typeof p.file_id === "string" && p.image_url == null) throw unsupported(`'${where}.file_id': reelay has no files API; send the image as 'image_url' (an https URL or a data: URL).`, `${where}.file_id`);
        return { type: "input_image", image_url: str(p.image_url, `${where}.image_url`, "an image URL or a data: URL"), ...(typeof p.detail === "string" ? { detail: p.detail } : {}) };
      case "input_audio":
        if (typeof p.input_audio?.data !== "string" || typeof p.input_audio?.format !== "string") throw badRequest(`'${where}.input_audio' must be {data, format}.`, `${where}.input_audio`);
        return { type: "input_audio", input_audio: { data: p.input_audio.data, format: p.input_audio.format } };
      case "input_file":
        throw unsupported(`'${where}': file inputs are not supported (reelay has no files API and chat models take text, images and audio).`, where);
      default:
        throw badRequest(`'${where}.type' must be input_text, input_image, input_audio, output_text or refusal.`, `${where}.type`);
    }
  });
}
