/**
 * A chat completion stream rewritten as the Responses API's typed events, in the order the official
 * SDKs check: response.created, response.in_progress, then for each output item
 * output_item.added → (content_part.added → output_text.delta… → output_text.done →
 * content_part.done | function_call_arguments.delta… → function_call_arguments.done) →
 * output_item.done, and last response.completed (response.incomplete when max_output_tokens cut the
 * answer) carrying the billed usage. A custom tool's call (a function with one string argument
 * to the model, tools.ts) is a custom_tool_call item whose input is sent whole when the call is
 * complete (custom_tool_call_input.delta → .done): its JSON argument text cannot be cut into
 * pieces of the input string as it arrives. Every event has its `sequence_number`. One chat chunk may
 * open, fill and close several items; an item's events are never interleaved with another's
 * except for parallel tool calls, whose argument deltas carry their own output_index.
 */
import type { BilledChat } from "../chat-bridge/complete.ts";
import type { ChatStreamRewriter, StreamError } from "../chat-bridge/stream.ts";
import { itemId } from "./ids.ts";
import type { ReasoningField } from "./reasoning-seal.ts";
import { incompleteReason, logprobsOf, reasoningItem, reasoningOf, responseObject, usageOf, type OutputItem, type ResponseBody, type ResponseContext } from "./output.ts";
import { callItem, customInput } from "./tools.ts";

type TextKind = "message" | "reasoning";

export class ResponsesStream implements ChatStreamRewriter {
  private seq = 0;
  private started = false;
  private readonly output: OutputItem[] = [];
  /** the message or reasoning item receiving text deltas */
  private open: { kind: TextKind; index: number } | null = null;
  /** chat tool_calls[].index → output index */
  private readonly tools = new Map<number, number>();
  private readonly openTools = new Set<number>();
  /** output index → the chat arguments of a custom tool's call, until it is complete */
  private readonly customArgs = new Map<number, string>();
  /** the chat field the upstream streams its reasoning in */
  private reasoningField: ReasoningField = "reasoning_content";
  private finish: unknown = null;
  /** response.completed / incomplete / failed was sent: nothing follows it */
  private ended = false;
  private upstreamUsage: Record<string, any> | undefined;

  /** `settle` gets the final response (to store it) and returns the one to send. */
  constructor(private readonly ctx: ResponseContext, private readonly settle: (response: ResponseBody) => Promise<ResponseBody>) {}

  chunk(json: any): string {
    if (this.ended) return "";
    let out = this.start();
    if (json?.usage && typeof json.usage === "object") this.upstreamUsage = json.usage;
    const choice = Array.isArray(json?.choices) ? json.choices[0] : undefined;
    if (!choice) return out;
    const d = choice.delta ?? {};
    const reasoning = reasoningOf(d);
    if (reasoning) {
      this.reasoningField = reasoning.field;
      out += this.text("reasoning", reasoning.text, null);
    }
    if (typeof d.content === "string" && d.content !== "") out += this.text("message", d.content, choice.logprobs);
    if (Array.isArray(d.tool_calls)) for (const tc of d.tool_calls) out += this.toolDelta(tc);
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  async done(billed: BilledChat): Promise<string> {
    if (this.ended) return "";
    this.ended = true;
    let out = this.start();
    const incomplete = incompleteReason(this.finish);
    if (this.output.length === 0) out += this.openText("message"); // an empty answer is still one (empty) message, as non-streamed
    out += this.closeText(incomplete) + this.closeTools();
    const response = await this.settle(responseObject(this.ctx, incomplete ? "incomplete" : "completed", this.output, { usage: usageOf(billed, this.upstreamUsage), incomplete }));
    return out + this.event(incomplete ? "response.incomplete" : "response.completed", { response });
  }

  async failed(error: StreamError, billed: BilledChat): Promise<string> {
    if (this.ended) return "";
    this.ended = true;
    let out = this.start();
    out += this.event("error", { code: error.code, message: error.message, param: error.param });
    const response = await this.settle(responseObject(this.ctx, "failed", this.output, { usage: usageOf(billed, this.upstreamUsage), error: { code: error.code, message: error.message } }));
    return out + this.event("response.failed", { response });
  }

  private event(type: string, fields: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...fields })}\n\n`;
  }

  private start(): string {
    if (this.started) return "";
    this.started = true;
    const response = responseObject(this.ctx, "in_progress", []);
    return this.event("response.created", { response }) + this.event("response.in_progress", { response });
  }

  private text(kind: TextKind, delta: string, logprobs: unknown): string {
    let out = "";
    if (this.open?.kind !== kind) out += this.closeText(null) + this.openText(kind);
    const index = this.open!.index;
    const item = this.output[index]!;
    const part = item.content[0];
    part.text += delta;
    if (kind === "reasoning") return out + this.event("response.reasoning_text.delta", { item_id: item.id, output_index: index, content_index: 0, delta });
    const lp = logprobsOf(logprobs);
    part.logprobs.push(...lp);
    return out + this.event("response.output_text.delta", { item_id: item.id, output_index: index, content_index: 0, delta, logprobs: lp });
  }

  private openText(kind: TextKind): string {
    const index = this.output.length;
    const item: OutputItem = kind === "message"
      ? { id: itemId("msg", this.ctx.stem, "o", index), type: "message", status: "in_progress", role: "assistant", content: [] }
      : { id: itemId("rs", this.ctx.stem, "o", index), type: "reasoning", summary: [], content: [] };
    this.output.push(item);
    this.open = { kind, index };
    const part = kind === "message" ? { type: "output_text", text: "", annotations: [], logprobs: [] } : { type: "reasoning_text", text: "" };
    let out = this.event("response.output_item.added", { output_index: index, item });
    out += this.event("response.content_part.added", { item_id: item.id, output_index: index, content_index: 0, part });
    item.content.push(part);
    return out;
  }

  /** Close the open text item; `incomplete` marks a message the token limit cut. */
  private closeText(incomplete: string | null): string {
    if (!this.open) return "";
    const { kind, index } = this.open;
    this.open = null;
    const item = this.output[index]!;
    const part = item.content[0];
    let out = kind === "message"
      ? this.event("response.output_text.done", { item_id: item.id, output_index: index, content_index: 0, text: part.text, logprobs: part.logprobs })
      : this.event("response.reasoning_text.done", { item_id: item.id, output_index: index, content_index: 0, text: part.text });
    out += this.event("response.content_part.done", { item_id: item.id, output_index: index, content_index: 0, part });
    if (kind === "message") item.status = incomplete ? "incomplete" : "completed";
    else if (this.ctx.sealReasoning) Object.assign(item, reasoningItem(this.ctx, item.id, part.text, this.reasoningField));
    return out + this.event("response.output_item.done", { output_index: index, item });
  }

  private toolDelta(tc: any): string {
    let out = "";
    const key = Number.isSafeInteger(tc?.index) ? tc.index : 0;
    let index = this.tools.get(key);
    if (index === undefined) {
      out += this.closeText(null);
      index = this.output.length;
      const call = callItem(this.ctx.tools, String(tc?.function?.name ?? ""), "");
      const custom = call.type === "custom_tool_call";
      const item = {
        id: itemId(custom ? "ctc" : "fc", this.ctx.stem, "o", index), ...call, status: "in_progress",
        call_id: typeof tc?.id === "string" && tc.id ? tc.id : `call_${this.ctx.stem}${index}`,
      } as OutputItem;
      this.output.push(item);
      this.tools.set(key, index);
      this.openTools.add(index);
      if (custom) this.customArgs.set(index, "");
      out += this.event("response.output_item.added", { output_index: index, item });
    }
    const item = this.output[index]!;
    const args = tc?.function?.arguments;
    if (typeof args === "string" && args !== "") {
      const custom = this.customArgs.get(index);
      if (custom !== undefined) this.customArgs.set(index, custom + args);
      else {
        item.arguments += args;
        out += this.event("response.function_call_arguments.delta", { item_id: item.id, output_index: index, delta: args });
      }
    }
    return out;
  }

  private closeTools(): string {
    let out = "";
    for (const index of this.openTools) {
      const item = this.output[index]!;
      item.status = "completed";
      const custom = this.customArgs.get(index);
      if (custom !== undefined) {
        item.input = customInput(custom);
        out += this.event("response.custom_tool_call_input.delta", { item_id: item.id, output_index: index, delta: item.input });
        out += this.event("response.custom_tool_call_input.done", { item_id: item.id, output_index: index, input: item.input });
      } else out += this.event("response.function_call_arguments.done", { item_id: item.id, output_index: index, name: item.name, arguments: item.arguments });
      out += this.event("response.output_item.done", { output_index: index, item });
    }
    this.openTools.clear();
    this.customArgs.clear();
    return out;
  }
}
