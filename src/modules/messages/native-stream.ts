/**
 * A native Messages stream as the chat relay sends it (relay-stream.ts's RelayFormat): each
 * upstream event is written as it came (`event: <name>\ndata: <the upstream's JSON>\n\n`, pings
 * included), with two exceptions. `message_start` names the model as native.ts answers it. `message_delta` (the
 * stop reason and the upstream's final usage) is held until `message_stop`, the stream's end: the
 * request is settled, and it goes out with the usage billed — the counts the usage row records —
 * then `message_stop`. Anthropic sends the two back to back, so holding one costs the client
 * nothing.
 *
 * Delivered tokens (a client that disconnects pays the prompt and these): the text of every
 * `text_delta`, `thinking_delta` and `input_json_delta` handed to the client, by reelay's count.
 * A failure after the first event: an `error` event in Anthropic's envelope, no `message_stop`.
 */
import type { ApiError } from "../../errors.ts";
import { anthropicErrorType } from "../../http/anthropic-errors.ts";
import { MessagesStreamUsage } from "../../plugin-host/checked-messages.ts";
import type { MessagesStreamEvent } from "../../plugin-sdk/index.ts";
import { countTextTokens } from "../../text/tokens.ts";
import { billedChat } from "../chat-bridge/complete.ts";
import type { ClosedRequest, ReportedUsage } from "../chat/close-request.ts";
import type { RelayFormat } from "../chat/relay-stream.ts";
import { usageOf } from "./output.ts";

const frame = (event: string, data: string) => `event: ${event}\ndata: ${data}\n\n`;

export class NativeMessagesFormat implements RelayFormat<MessagesStreamEvent> {
  private readonly usage = new MessagesStreamUsage();
  private text = "";
  private held: MessagesStreamEvent["json"] | null = null;
  private stop: MessagesStreamEvent | null = null;

  constructor(private readonly model: string) {}

  isEnd(e: MessagesStreamEvent): boolean {
    if (e.event !== "message_stop") return false;
    this.stop = e; // sent by done(), after the held message_delta
    return true;
  }

  relay(e: MessagesStreamEvent): string | null {
    this.usage.observe(e.json);
    switch (e.event) {
      case "message_start": {
        const message = e.json.message as Record<string, unknown> | undefined;
        return frame(e.event, JSON.stringify({ ...e.json, message: { ...message, model: this.model } }));
      }
      case "message_delta":
        this.held = e.json;
        return null;
      default:
        return frame(e.event, e.data);
    }
  }

  delivered(e: MessagesStreamEvent): void {
    if (e.event !== "content_block_delta") return;
    const d = e.json.delta as Record<string, unknown> | undefined;
    const piece = d?.type === "text_delta" ? d.text : d?.type === "thinking_delta" ? d.thinking : d?.type === "input_json_delta" ? d.partial_json : undefined;
    if (typeof piece === "string") this.text += piece;
  }

  deliveredTokens(): number {
    return countTextTokens(this.text); // once, when the stream ends
  }

  reported(): ReportedUsage | null {
    return this.usage.reported();
  }

  running(): unknown {
    return undefined; // message_delta's count is final, not one per delivered event
  }

  done(billed: ClosedRequest): string {
    const delta = this.held ? frame("message_delta", JSON.stringify({ ...this.held, usage: { ...(this.held.usage as object | undefined), ...usageOf(billedChat(billed)) } })) : "";
    return delta + frame("message_stop", this.stop?.data ?? '{"type":"message_stop"}');
  }

  failed(error: ApiError): string {
    return frame("error", JSON.stringify({ type: "error", error: { type: anthropicErrorType(error.type, error.status), message: error.message } }));
  }
}
