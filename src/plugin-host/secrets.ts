/**
 * The secrets a model's plugin read through `ctx.env` (its upstream's API key, a worker's token),
 * and their redaction from everything the host relays or logs for that plugin: error messages a
 * client or a job object sees, a failed job's message, stream events, the plugin's log lines.
 *
 * An upstream that quotes the Authorization header it received in an error body (seen in the
 * hardening run: 5 of 5 error cases relayed the key) must not hand the operator's key to a client,
 * whatever plugin relays it. Plugins may redact their own (openai-compatible does); the host does
 * it for every plugin, because it knows which values are secret: the ones read from the environment.
 */

/** shorter values ("1", "true", a port) are settings, not secrets, and would redact ordinary text */
const MIN_SECRET_CHARS = 8;
const MASK = "[redacted]";

export class PluginSecrets {
  private readonly values = new Set<string>();

  /** note a value read from the environment; returns it unchanged */
  note(value: string | undefined): string | undefined {
    if (value && value.length >= MIN_SECRET_CHARS) this.values.add(value);
    return value;
  }

  get size(): number {
    return this.values.size;
  }

  /** `text` with every secret replaced by [redacted] (the same string when none occurs: no copy) */
  redact(text: string): string {
    if (this.values.size === 0) return text;
    let out = text;
    for (const v of this.values) if (out.includes(v)) out = out.replaceAll(v, MASK);
    return out;
  }

  /** a log field or a result value, redacted: strings as above, objects through their JSON when it holds a secret */
  redactValue(value: unknown): unknown {
    if (this.values.size === 0 || value === null || value === undefined) return value;
    if (typeof value === "string") return this.redact(value);
    if (value instanceof Error) {
      const message = this.redact(value.message);
      const stack = value.stack === undefined ? undefined : this.redact(value.stack);
      return message === value.message && stack === value.stack ? value : { type: value.name, message, stack };
    }
    if (typeof value !== "object") return value;
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      return value;
    }
    if (json === undefined) return value;
    const redacted = this.redact(json);
    return redacted === json ? value : JSON.parse(redacted);
  }
}
