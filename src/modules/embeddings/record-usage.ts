import { sql } from "drizzle-orm";
import type { Tx } from "../../db/index.ts";

export interface EmbeddingsUsage {
  accountId: string;
  keyId: string;
  ref: string;
  model: string;
  plugin: string;
  promptTokens: number | null;
  /** "upstream" when the plugin reported the count, "local" when reelay counted */
  tokenSource: "upstream" | "local";
  cost: number;
  status: number;
  latencyMs: number;
  errorCode: string | null;
  disconnected: boolean;
}

/** One usage_records row; run it in the transaction that settles or releases the hold. */
export async function insertEmbeddingsUsage(tx: Tx, u: EmbeddingsUsage): Promise<void> {
  await tx.execute(sql`
    INSERT INTO usage_records (account_id, key_id, ref, kind, model, prompt_tokens, token_source, cost, status, disconnected, latency_ms, plugin, error_code)
    VALUES (${u.accountId}, ${u.keyId}, ${u.ref}, 'embeddings', ${u.model}, ${u.promptTokens}, ${u.tokenSource}, ${u.cost}, ${u.status}, ${u.disconnected}, ${u.latencyMs}, ${u.plugin}, ${u.errorCode})`);
}
