/**
 * `include: ["reasoning.encrypted_content"]`: a client that keeps no state on the server
 * (`store: false`, as Codex CLI runs) gets each reasoning item with an opaque `encrypted_content`
 * and sends it back with the rest of the conversation; reelay opens it and gives the model its
 * earlier reasoning again (`reasoning_content` on the assistant message it led to).
 *
 * What is sealed: the reasoning text, the field the upstream sent it in (`reasoning_content`, or
 * `reasoning` as vLLM ≥ 0.10, Ollama and OpenRouter name it) and the id of the reelay model that
 * produced it; never
 * anything of the upstream's (a provider's own encrypted reasoning, keys). AES-256-GCM under a key
 * derived (HKDF, its own purpose string) from the operator's REELAY_SECRET_KEY — the same
 * operator secret and sealing as webhook secrets (webhooks/secret-box.ts) — bound to the account,
 * so a blob copied into another account's request does not open.
 *
 * The text goes back only to the model that produced it, in the field it came in: an upstream that
 * sends reasoning (DeepSeek, vLLM's reasoning parsers …) reads it back on an assistant message
 * (DeepSeek requires it within a tool-calling turn), while one that never sent any (OpenAI's chat
 * API) might refuse the unknown field. A blob that does not open (another key, altered, another
 * account) is dropped: the conversation goes on without that reasoning, as it would on a chat API.
 *
 * Without REELAY_SECRET_KEY: under PGlite the data directory's key file (as webhooks), under
 * PostgreSQL a random key for this process's life — sealed reasoning then opens only on the
 * instance that sealed it, until it restarts; elsewhere it is dropped.
 */
import { randomBytes } from "node:crypto";
import type { Config } from "../../config.ts";
import { createSecretBox, loadSecretBox, type SecretBox } from "../webhooks/secret-box.ts";

const PURPOSE = "responses-reasoning v1";

/** the chat field an upstream sends its reasoning in */
export type ReasoningField = "reasoning_content" | "reasoning";

export interface SealedReasoning {
  model: string;
  text: string;
  field: ReasoningField;
}

export interface ReasoningSeal {
  seal(reasoning: SealedReasoning, accountId: string): string;
  /** null: not reelay's, sealed under another key or for another account, or altered */
  open(sealed: string, accountId: string): SealedReasoning | null;
}

export function reasoningSeal(config: Pick<Config, "secretKey" | "databaseUrl" | "dataDir">): ReasoningSeal {
  let box: SecretBox | undefined;
  // opened on first use: under PGlite that may create the key file, which only a request that needs it should do
  const get = () => (box ??= loadSecretBox(config, PURPOSE) ?? createSecretBox(randomBytes(32).toString("base64url"), PURPOSE));
  return {
    seal: ({ model, text, field }, accountId) => get().seal(JSON.stringify({ m: model, t: text, f: field }), accountId),
    open(sealed, accountId) {
      try {
        const { m, t, f } = JSON.parse(get().open(sealed, accountId)) as { m?: unknown; t?: unknown; f?: unknown };
        return typeof m === "string" && typeof t === "string" ? { model: m, text: t, field: f === "reasoning" ? "reasoning" : "reasoning_content" } : null;
      } catch {
        return null;
      }
    },
  };
}
