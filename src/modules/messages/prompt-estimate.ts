/**
 * reelay's prompt estimate of a Messages request as sent (the hold of a native pass-through, and
 * count_tokens for a native model whose plugin cannot ask its upstream): every text the upstream
 * reads counts — system, text blocks, thinking, tool calls' inputs, tool results, documents' text,
 * the tools' definitions — through the chat estimate (bounded in time whatever the text). Images
 * and binary documents are media parts, as chat counts them (the allowance, not the estimate).
 */
import type { RequestView } from "../chat/service.ts";
import { estimatePrompt } from "../chat/service.ts";

type Block = Record<string, any>;

export interface MessagesPrompt {
  /** the request as chat-shaped text: one message per turn, the system prompt first */
  chatShaped: { messages: Array<{ role: string; content: string }>; tools?: unknown };
  mediaParts: number;
}

export function messagesPrompt(body: Record<string, any>): MessagesPrompt {
  const media = { n: 0 };
  const messages: Array<{ role: string; content: string }> = [];
  const system = contentText(body.system, media);
  if (system !== "") messages.push({ role: "system", content: system });
  for (const m of Array.isArray(body.messages) ? body.messages : []) messages.push({ role: typeof m?.role === "string" ? m.role : "user", content: contentText(m?.content, media) });
  return { chatShaped: { messages, tools: body.tools ?? undefined }, mediaParts: media.n };
}

/** The estimate and media parts of a Messages body, for prepareRequest's view. */
export function messagesEstimate(body: Record<string, any>): Pick<RequestView<unknown>, "estimate" | "mediaParts"> {
  const prompt = messagesPrompt(body);
  return { estimate: () => estimatePrompt(prompt.chatShaped), mediaParts: prompt.mediaParts };
}

function contentText(content: unknown, media: { n: number }): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let text = "";
  for (const b of content as Block[]) text += blockText(b, media);
  return text;
}

function blockText(b: Block | null, media: { n: number }): string {
  switch (b?.type) {
    case "text":
      return typeof b.text === "string" ? b.text : "";
    case "thinking":
      return typeof b.thinking === "string" ? b.thinking : "";
    case "tool_use":
    case "server_tool_use":
      return String(b.name ?? "") + json(b.input);
    case "tool_result":
      return contentText(b.content, media);
    case "document":
      if (b.source?.type === "text" && typeof b.source.data === "string") return b.source.data;
      if (b.source?.type === "content") return contentText(b.source.content, media);
      media.n++;
      return "";
    case "image":
    case "redacted_thinking":
    case "container_upload":
      media.n++;
      return "";
    default:
      // blocks reelay does not know (search results, server tools' results, betas): their JSON
      return b && typeof b === "object" ? json(b) : "";
  }
}

function json(v: unknown): string {
  try {
    return JSON.stringify(v ?? {}) ?? "";
  } catch {
    return "";
  }
}
