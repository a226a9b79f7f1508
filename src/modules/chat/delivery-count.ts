/**
 * What one streamed response has delivered, and what the upstream reported. Only events actually
 * handed to the client count: a client that disconnects is billed on these numbers.
 */
import { countTextTokens } from "../../text/tokens.ts";

export class DeliveryCount {
  private text = "";
  /** completion_tokens of the last delivered chunk that carried running usage (vLLM continuous_usage_stats) */
  private runningCompletion: number | null = null;
  /** the upstream's last reported usage, delivered to the client or not */
  reported: { prompt: number; completion: number } | null = null;
  events = 0;

  /** note the usage an upstream event reports (called for every event, even ones not relayed) */
  observe(json: any): void {
    const u = json?.usage;
    if (u && typeof u.prompt_tokens === "number" && typeof u.completion_tokens === "number") this.reported = { prompt: u.prompt_tokens, completion: u.completion_tokens };
  }

  /** an event was written to the client */
  delivered(json: any): void {
    this.events++;
    const choices = Array.isArray(json?.choices) ? json.choices : [];
    for (const c of choices) {
      const d = c?.delta;
      if (typeof d?.content === "string") this.text += d.content;
      if (typeof d?.reasoning_content === "string") this.text += d.reasoning_content;
      for (const tc of Array.isArray(d?.tool_calls) ? d.tool_calls : []) if (typeof tc?.function?.arguments === "string") this.text += tc.function.arguments;
    }
    const u = json?.usage;
    if (choices.length > 0 && typeof u?.completion_tokens === "number") this.runningCompletion = u.completion_tokens;
  }

  /** completion tokens delivered: the upstream's running count when it sends one, else reelay's tokenizer */
  get tokens(): number {
    return this.runningCompletion ?? countTextTokens(this.text);
  }

  get source(): "upstream" | "local" {
    return this.runningCompletion === null ? "local" : "upstream";
  }
}
