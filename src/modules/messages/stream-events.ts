/**
 * A chat completion stream rewritten as Anthropic's Messages events, in the grammar its SDKs
 * accumulate: `message_start` (once, first) and a `ping`; then content blocks, each
 * `content_block_start` → `content_block_delta`… → `content_block_stop`, indices 0, 1, 2 … and
 * one block open at a time; then `message_delta` (stop reason, and the usage billed — held until
 * the chat stream has settled) and `message_stop`. `ping` also keeps a quiet stream alive.
 *
 * Chat deltas map to blocks: `reasoning_content` (or `reasoning`) → `thinking` (closed with an
 * empty `signature_delta`: a chat upstream signs nothing), `content` (and `refusal`) → `text`,
 * `tool_calls` fragments → `tool_use` with `input_json_delta`s. Upstreams send tool calls one after
 * the other, and each streams as it comes: a call's block closes when the next content begins,
 * once its arguments are a whole JSON value. An upstream that interleaves calls (or writes text
 * in the middle of one) cannot be streamed in one-open-block order; from that point on, what
 * comes is held and sent as whole blocks at the end, in the order it began. (The chat relay counts
 * held text as delivered, so a client that leaves while something is held pays for it too: only
 * with such upstreams.)
 */
import type { BilledChat } from "../chat-bridge/complete.ts";
import type { ChatStreamRewriter, StreamError } from "../chat-bridge/stream.ts";
import { anthropicErrorType } from "../../http/anthropic-errors.ts";
import { newToolUseId, reasoningOf, stopReasonOf, usageOf, type MessageContext } from "./output.ts";

type TextKind = "text" | "thinking";
interface ToolCall {
  id: string;
  name: string;
  args: string;
  state: "waiting" | "open" | "held" | "closed";
}
type Held = { kind: TextKind; text: string } | { kind: "tool"; call: ToolCall };

const event = (type: string, fields: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
const PING = event("ping", {});

export class MessagesStream implements ChatStreamRewriter {
  readonly keepAlive: { everyMs: number; event: string };
  private started = false;
  /** message_stop or error was sent: nothing follows */
  private ended = false;
  private nextIndex = 0;
  private open: { kind: TextKind | "tool"; index: number; call?: ToolCall } | null = null;
  /** chat tool_calls[].index → the call */
  private readonly calls = new Map<number, ToolCall>();
  /** content that could not stream in order, sent whole at the end */
  private readonly held: Held[] = [];
  private holding = false;
  private lastChoice: Record<string, any> | undefined;
  private refused = false;

  /** `pingMs`: a quiet stream gets a ping this often (REELAY_STREAM_PING_MS; proxies and clients drop connections idle for 30–120 s) */
  constructor(private readonly ctx: MessageContext, pingMs = 10_000) {
    this.keepAlive = { everyMs: pingMs, event: PING };
  }

  chunk(json: any): string {
    if (this.ended) return "";
    let out = this.start(json?.model);
    const choice = Array.isArray(json?.choices) ? json.choices[0] : undefined;
    if (!choice || typeof choice !== "object") return out;
    const d = choice.delta ?? {};
    const reasoning = reasoningOf(d);
    if (reasoning !== "") out += this.text("thinking", reasoning);
    if (typeof d.content === "string" && d.content !== "") out += this.text("text", d.content);
    if (typeof d.refusal === "string" && d.refusal !== "") {
      this.refused = true;
      out += this.text("text", d.refusal);
    }
    if (Array.isArray(d.tool_calls)) for (const tc of d.tool_calls) out += this.toolFragment(tc);
    if (choice.finish_reason) this.lastChoice = choice;
    return out;
  }

  done(billed: BilledChat): string {
    if (this.ended) return "";
    this.ended = true;
    const out = this.start(undefined) + this.flush();
    const stop = stopReasonOf(this.lastChoice, this.ctx, { toolCalls: this.calls.size > 0, refused: this.refused });
    return out + event("message_delta", { delta: stop, usage: usageOf(billed) }) + event("message_stop", {});
  }

  /** Everything received is sent (it is paid for), then the error; Anthropic ends a failed stream with no message_stop. */
  failed(error: StreamError, _billed: BilledChat): string {
    if (this.ended) return "";
    this.ended = true;
    const out = this.start(undefined) + this.flush();
    return out + event("error", { error: { type: anthropicErrorType(error.type), message: error.message } });
  }

  private start(model: unknown): string {
    if (this.started) return "";
    this.started = true;
    const message = {
      id: this.ctx.id, type: "message", role: "assistant", model: typeof model === "string" ? model : "", content: [], stop_reason: null, stop_sequence: null,
      // the counts billed come with message_delta, once the upstream's usage is in
      usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
    };
    return event("message_start", { message }) + PING;
  }

  private text(kind: TextKind, delta: string): string {
    let out = "";
    if (this.open?.kind !== kind) {
      if (!this.holding && this.open?.kind === "tool" && !wholeJson(this.open.call!.args)) this.holding = true;
      if (this.holding) return this.hold(kind, delta);
      out += this.close() + this.openBlock(kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" }, kind);
    }
    return out + this.delta(kind === "text" ? { type: "text_delta", text: delta } : { type: "thinking_delta", thinking: delta });
  }

  private hold(kind: TextKind, text: string): string {
    const last = this.held.at(-1);
    if (last && last.kind === kind) last.text += text;
    else this.held.push({ kind, text });
    return "";
  }

  private toolFragment(tc: any): string {
    const key = Number.isSafeInteger(tc?.index) ? tc.index : 0;
    const fn = tc?.function ?? {};
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    let call = this.calls.get(key);
    if (!call) {
      call = { id: "", name: "", args: "", state: "waiting" };
      this.calls.set(key, call);
    }
    if (call.id === "" && typeof tc?.id === "string") call.id = tc.id;
    if (call.name === "" && typeof fn.name === "string") call.name = fn.name;
    switch (call.state) {
      case "held":
        call.args += args;
        return "";
      case "closed":
        return ""; // more after a whole JSON value: nothing a client could parse
      case "open":
        call.args += args;
        return args === "" ? "" : this.delta({ type: "input_json_delta", partial_json: args });
      case "waiting": {
        // its block opens once the call has a name (servers send it with the first fragment)
        call.args += args;
        if (call.name === "") return "";
        if (this.holding || (this.open?.kind === "tool" && !wholeJson(this.open.call!.args))) {
          this.holding = true;
          call.state = "held";
          this.held.push({ kind: "tool", call });
          return "";
        }
        let out = this.close() + this.openBlock({ type: "tool_use", id: call.id || (call.id = newToolUseId()), name: call.name, input: {} }, "tool", call);
        call.state = "open";
        if (call.args !== "") out += this.delta({ type: "input_json_delta", partial_json: call.args });
        return out;
      }
    }
  }

  private openBlock(content_block: Record<string, unknown>, kind: TextKind | "tool", call?: ToolCall): string {
    const index = this.nextIndex++;
    this.open = { kind, index, call };
    return event("content_block_start", { index, content_block });
  }

  private delta(delta: Record<string, unknown>): string {
    return event("content_block_delta", { index: this.open!.index, delta });
  }

  private close(): string {
    const open = this.open;
    if (!open) return "";
    this.open = null;
    if (open.call) open.call.state = "closed";
    const signature = open.kind === "thinking" ? event("content_block_delta", { index: open.index, delta: { type: "signature_delta", signature: "" } }) : "";
    return signature + event("content_block_stop", { index: open.index });
  }

  /** Close the open block, then send what was held and the calls that never got a name, each whole. */
  private flush(): string {
    let out = this.close();
    const unnamed = [...this.calls.values()].filter((c) => c.state === "waiting");
    for (const item of [...unnamed.map((call): Held => ({ kind: "tool", call })), ...this.held]) {
      if (item.kind === "tool") {
        const c = item.call;
        out += this.openBlock({ type: "tool_use", id: c.id || newToolUseId(), name: c.name, input: {} }, "tool", c);
        if (c.args !== "") out += this.delta({ type: "input_json_delta", partial_json: c.args });
      } else {
        out += this.openBlock(item.kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" }, item.kind);
        out += this.delta(item.kind === "text" ? { type: "text_delta", text: item.text } : { type: "thinking_delta", thinking: item.text });
      }
      out += this.close();
    }
    this.held.length = 0;
    return out;
  }
}

/** Are these arguments a whole JSON value (the call is complete, its block may close)? */
function wholeJson(args: string): boolean {
  if (args.trim() === "") return false;
  try {
    JSON.parse(args);
    return true;
  } catch {
    return false;
  }
}
