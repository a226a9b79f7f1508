/**
 * An upstream's credentials must never reach a client or a log: an upstream that quotes the
 * Authorization header it received (in an error body, a stream error event, even an answer) would
 * otherwise have reelay relay its key. Pass `redactor([key, urlPassword(baseUrl)])` to callUpstream
 * as `redact`: every text it passes on goes through it. (reelay also masks every value a plugin
 * read through `ctx.env`; a password inside a configured URL is not one of those.)
 */

/** Shorter "secrets" would redact ordinary words; real API keys are 20+ characters. */
const MIN_SECRET_LENGTH = 8;
export const REDACTED = "[redacted]";

export type Redact = (text: string) => string;

/** A redactor for these secret values (an API key; a password in a base URL). */
export function redactor(secrets: Array<string | undefined>): Redact {
  const list = [...new Set(secrets.filter((s): s is string => typeof s === "string" && s.length >= MIN_SECRET_LENGTH))];
  if (!list.length) return (text) => text;
  return (text) => {
    let out = text;
    for (const s of list) if (out.includes(s)) out = out.replaceAll(s, REDACTED);
    return out;
  };
}

/** The password of a URL with userinfo (https://user:pass@host), decoded. */
export function urlPassword(url: string): string | undefined {
  try {
    const p = new URL(url).password;
    return p ? decodeURIComponent(p) : undefined;
  } catch {
    return undefined;
  }
}
