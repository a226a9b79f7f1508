/**
 * Operator accounts: one exported function per query (each takes the db or a transaction first),
 * and what the admin API and the CLI show of an operator. A personal token is hashed like an API key
 * (SHA-256 lookup, then a constant-time compare) and shown once.
 */
import { timingSafeEqual } from "node:crypto";
import { desc, eq } from "drizzle-orm";
import type { Tx } from "../db/index.ts";
import { operators } from "../db/schema/index.ts";
import { ApiError } from "../errors.ts";
import { randomId } from "../ids.ts";
import { hashKey } from "../accounts/api-keys.ts";
import type { Role } from "./roles.ts";

/** Operator tokens start "ro-" (client keys "rl-"), so either is recognised on sight in a log or a leak scan. */
export const OPERATOR_TOKEN_PREFIX = "ro-";

export type OperatorRow = typeof operators.$inferSelect;

export const generateOperatorToken = () => randomId("x", 40).replace(/^x_/, OPERATOR_TOKEN_PREFIX);

export async function createOperator(tx: Tx, input: { name: string; role: Role }) {
  const token = generateOperatorToken();
  const [row] = await tx
    .insert(operators)
    .values({ id: randomId("op"), name: input.name, role: input.role, prefix: token.slice(0, OPERATOR_TOKEN_PREFIX.length + 8), hash: hashKey(token) })
    .returning();
  return { token, record: row! };
}

export const listOperators = (tx: Tx) => tx.select().from(operators).orderBy(desc(operators.createdAt));

export async function getOperator(tx: Tx, id: string) {
  const [row] = await tx.select().from(operators).where(eq(operators.id, id));
  if (!row) throw new ApiError(404, "not_found_error", `No operator '${id}'.`, { code: "operator_not_found" });
  return row;
}

export async function updateOperator(tx: Tx, id: string, change: { name?: string; role?: Role }) {
  await getOperator(tx, id);
  const [row] = await tx.update(operators).set({ ...change, updatedAt: new Date() }).where(eq(operators.id, id)).returning();
  return row!;
}

export async function revokeOperator(tx: Tx, id: string) {
  const existing = await getOperator(tx, id);
  if (existing.revokedAt) return existing;
  const [row] = await tx.update(operators).set({ revokedAt: new Date(), updatedAt: new Date() }).where(eq(operators.id, id)).returning();
  return row!;
}

/** The live operator a token belongs to, or null (unknown or revoked). */
export async function operatorByToken(tx: Tx, token: string): Promise<OperatorRow | null> {
  if (!token.startsWith(OPERATOR_TOKEN_PREFIX) || token.length > 200) return null;
  const hash = hashKey(token);
  const [row] = await tx.select().from(operators).where(eq(operators.hash, hash));
  if (!row || row.revokedAt) return null;
  return timingSafeEqual(Buffer.from(row.hash, "hex"), Buffer.from(hash, "hex")) ? row : null;
}

/** What the API shows of an operator: never the token or its hash. */
export function publicOperator(row: OperatorRow) {
  return {
    id: row.id,
    object: "operator" as const,
    name: row.name,
    role: row.role as Role,
    token_prefix: row.prefix,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    revoked_at: row.revokedAt?.toISOString() ?? null,
  };
}
