/**
 * CLI subcommands of the reelay program. Each opens the database with the same configuration as
 * the server, does one thing, prints JSON and exits. With embedded PGlite the CLI needs the data
 * directory to itself: while the server runs, use the admin HTTP API instead.
 */
import { parseArgs } from "node:util";
import * as billing from "../billing/index.ts";
import { openAndMigrate } from "../boot.ts";
import type { Config } from "../config.ts";
import type { Db } from "../db/index.ts";
import type { Logger } from "../logger.ts";
import * as accounts from "../accounts/accounts.ts";
import * as keys from "../accounts/api-keys.ts";
import { listLedger } from "../accounts/usage-and-ledger.ts";
import { USAGE_COMMANDS } from "./usage-commands.ts";
import { WEBHOOK_COMMANDS } from "./webhook-commands.ts";
import { BUDGET_COMMANDS, budgetSpec } from "./budget-commands.ts";
import { OPERATOR_COMMANDS } from "./operator-commands.ts";
import { budgetError, normaliseBudgets, setBudgetsIn } from "../billing/budgets.ts";
import { cliAudited } from "./cli-audit.ts";

/** a mistake in the command line (exit 2 and the usage); main.ts recognises it by name, without importing this module */
export class UsageError extends Error {
  override name = "UsageError";
}

/** a state-changing command writes its audit rows through cliAudited, in the change's transaction */
export type Command = (db: Db, args: string[], config: Config, logger?: Logger) => Promise<unknown>;

function opts(args: string[], spec: Record<string, { type: "string" | "boolean"; required?: boolean }>) {
  let parsed;
  try {
    parsed = parseArgs({ args, options: Object.fromEntries(Object.entries(spec).map(([k, v]) => [k, { type: v.type }])), allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values, positionals } = parsed;
  for (const [k, v] of Object.entries(spec)) if (v.required && values[k] === undefined) throw new UsageError(`missing --${k}`);
  return { values: values as Record<string, string | undefined>, positionals };
}

function integer(name: string, raw: string | undefined, { allowNegative = false } = {}): number | undefined {
  if (raw === undefined) return undefined;
  if (!(allowNegative ? /^-?\d+$/ : /^\d+$/).test(raw)) throw new UsageError(`--${name} must be an integer${allowNegative ? "" : " ≥ 0"} (micro-dollars where it is money)`);
  return Number(raw);
}

const list = (raw: string | undefined) => (raw ? raw.split(",").map((s) => s.trim()).filter(Boolean) : null);

function limitsFrom(v: Record<string, string | undefined>): keys.KeyLimits {
  const out: keys.KeyLimits = {};
  const set = (flag: string, key: keyof keys.KeyLimits) => {
    if (v[flag] === undefined) return;
    out[key] = v[flag] === "default" ? null : integer(flag, v[flag]);
  };
  set("rpm", "rpmLimit");
  set("tpm", "tpmLimit");
  set("video-concurrency", "videoConcurrencyLimit");
  return out;
}

const LIMIT_FLAGS = { rpm: { type: "string" }, tpm: { type: "string" }, "video-concurrency": { type: "string" } } as const;

export const COMMANDS: Record<string, { usage: string; run: Command }> = {
  "accounts create": {
    usage: "accounts create --name NAME [--credits MICRO_USD]",
    run: async (db, args, _config, logger) => {
      const { values } = opts(args, { name: { type: "string", required: true }, credits: { type: "string" } });
      const amount = integer("credits", values.credits) ?? 0;
      return cliAudited(db, logger, async (tx, record) => {
        const row = await accounts.createFundedAccount(tx, values.name!, amount);
        const view = accounts.publicAccount(await accounts.getAccount(tx, row.id));
        await record({ action: "account.create", target: { type: "account", id: row.id }, after: { ...view, initial_credits: amount } });
        return view;
      });
    },
  },
  "accounts list": { usage: "accounts list", run: async (db) => (await accounts.listAccounts(db, 1000)).map((r) => accounts.publicAccount(r)) },
  "accounts limits": {
    usage: "accounts limits ACCOUNT_ID [--rpm N|default] [--tpm N|default] [--video-concurrency N|default]",
    run: async (db, args, _config, logger) => {
      const { values, positionals } = opts(args, LIMIT_FLAGS);
      const id = positionals[0];
      if (!id) throw new UsageError("missing ACCOUNT_ID");
      const limits = limitsFrom(values);
      return cliAudited(db, logger, async (tx, record) => {
        const before = accounts.publicAccount(await accounts.getAccount(tx, id));
        const after = accounts.publicAccount(await accounts.setAccountLimits(tx, id, limits));
        await record({ action: "account.limits", target: { type: "account", id }, before: before.limits, after: after.limits });
        return after;
      });
    },
  },
  "keys create": {
    usage: "keys create --account ACCOUNT_ID --name NAME [--scopes chat,embeddings,video] [--models m1,m2] [--rpm N] [--tpm N] [--video-concurrency N] [--budget PERIOD:LIMIT[:TIMEZONE[:MODEL,…]] …]",
    run: async (db, args, _config, logger) => {
      const budgets = args.flatMap((a, i) => (a === "--budget" && args[i + 1] ? [args[i + 1]!] : a.startsWith("--budget=") ? [a.slice(9)] : []));
      args = args.filter((a, i) => a !== "--budget" && args[i - 1] !== "--budget" && !a.startsWith("--budget="));
      const { values } = opts(args, { account: { type: "string", required: true }, name: { type: "string", required: true }, scopes: { type: "string" }, models: { type: "string" }, ...LIMIT_FLAGS });
      const scopes = list(values.scopes);
      for (const s of scopes ?? []) if (!keys.SCOPES.includes(s as keys.Scope)) throw new UsageError(`unknown scope "${s}" (chat, embeddings, video)`);
      const wanted = budgets.length ? normaliseBudgets(budgets.map((b) => budgetSpec(b, undefined))) : null; // a bad budget creates no key
      const input = { name: values.name!, scopes: scopes as keys.Scope[] | null, allowedModels: list(values.models), ...limitsFrom(values) };
      const { key, record, views } = await cliAudited(db, logger, async (tx, note) => {
        const created = await keys.createKey(tx, values.account!, input);
        const views = wanted ? await setBudgetsIn(tx, { accountId: values.account!, keyId: created.record.id }, wanted, Date.now()) : undefined;
        await note({ action: "key.create", target: { type: "key", id: created.record.id }, after: { ...keys.publicKey(created.record), ...(wanted ? { budgets: wanted } : {}) } });
        return { ...created, views };
      }).catch((e) => Promise.reject(budgetError(e)));
      return { ...keys.publicKey(record), key, ...(views ? { budgets: views } : {}), note: "store this key now: reelay keeps only its hash" };
    },
  },
  "keys list": {
    usage: "keys list --account ACCOUNT_ID",
    run: async (db, args) => (await keys.listKeys(db, opts(args, { account: { type: "string", required: true } }).values.account!)).map(keys.publicKey),
  },
  "keys revoke": {
    usage: "keys revoke KEY_ID",
    run: async (db, args, _config, logger) => {
      const id = opts(args, {}).positionals[0];
      if (!id) throw new UsageError("missing KEY_ID");
      return cliAudited(db, logger, async (tx, record) => {
        const before = await keys.getKey(tx, id);
        const after = keys.publicKey(await keys.revokeKey(tx, id));
        if (!before.revokedAt) await record({ action: "key.revoke", target: { type: "key", id }, before: keys.publicKey(before), after });
        return after;
      });
    },
  },
  "keys rotate": {
    usage: "keys rotate KEY_ID",
    run: async (db, args, _config, logger) => {
      const id = opts(args, {}).positionals[0];
      if (!id) throw new UsageError("missing KEY_ID");
      const { key, record } = await cliAudited(db, logger, async (tx, note) => {
        const before = await keys.getKey(tx, id);
        const rotated = await keys.rotateKey(tx, id);
        await note({ action: "key.rotate", target: { type: "key", id }, before: keys.publicKey(before), after: { ...keys.publicKey(rotated.record), replaces: id } });
        return rotated;
      });
      return { ...keys.publicKey(record), key, replaces: id };
    },
  },
  "keys limits": {
    usage: "keys limits KEY_ID [--rpm N|default] [--tpm N|default] [--video-concurrency N|default]",
    run: async (db, args, _config, logger) => {
      const { values, positionals } = opts(args, LIMIT_FLAGS);
      const id = positionals[0];
      if (!id) throw new UsageError("missing KEY_ID");
      const limits = limitsFrom(values);
      return cliAudited(db, logger, async (tx, record) => {
        const before = keys.publicKey(await keys.getKey(tx, id));
        const after = keys.publicKey(await keys.setKeyLimits(tx, id, limits));
        await record({ action: "key.limits", target: { type: "key", id }, before: before.limits, after: after.limits });
        return after;
      });
    },
  },
  "credits grant": {
    usage: "credits grant --account ACCOUNT_ID --amount MICRO_USD [--reason TEXT]",
    run: async (db, args, _config, logger) => {
      const { values } = opts(args, { account: { type: "string", required: true }, amount: { type: "string", required: true }, reason: { type: "string" } });
      const amount = integer("amount", values.amount)!;
      const reason = values.reason ?? "grant by CLI";
      await cliAudited(db, logger, async (tx, record) => {
        const balance = await billing.grant(tx, values.account!, amount, reason);
        await record({ action: "credits.grant", target: { type: "account", id: values.account! }, before: { balance: balance - amount }, after: { balance, amount, reason, ref: null } });
      });
      return billing.getBalance(db, values.account!);
    },
  },
  "credits adjust": {
    usage: "credits adjust --account ACCOUNT_ID --amount=±MICRO_USD --reason TEXT",
    run: async (db, args, _config, logger) => {
      const { values } = opts(args, { account: { type: "string", required: true }, amount: { type: "string", required: true }, reason: { type: "string", required: true } });
      const amount = integer("amount", values.amount, { allowNegative: true })!;
      await cliAudited(db, logger, async (tx, record) => {
        const balance = await billing.adjust(tx, values.account!, amount, values.reason!);
        await record({ action: "credits.adjust", target: { type: "account", id: values.account! }, before: { balance: balance - amount }, after: { balance, amount, reason: values.reason!, ref: null } });
      });
      return billing.getBalance(db, values.account!);
    },
  },
  balance: {
    usage: "balance --account ACCOUNT_ID",
    run: async (db, args) => billing.getBalance(db, opts(args, { account: { type: "string", required: true } }).values.account!),
  },
  ledger: {
    usage: "ledger --account ACCOUNT_ID [--limit N]",
    run: async (db, args) => {
      const { values } = opts(args, { account: { type: "string", required: true }, limit: { type: "string" } });
      await accounts.getAccount(db, values.account!);
      return listLedger(db, values.account!, { limit: integer("limit", values.limit) ?? 50 });
    },
  },
  ...USAGE_COMMANDS,
  ...WEBHOOK_COMMANDS,
  ...BUDGET_COMMANDS,
  ...OPERATOR_COMMANDS,
};

export function findCommand(argv: string[]): { name: string; run: Command; rest: string[] } | null {
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(" ");
    const cmd = COMMANDS[name];
    if (cmd) return { name, run: cmd.run, rest: argv.slice(words) };
  }
  return null;
}

export async function runCommand(config: Config, logger: Logger, argv: string[]): Promise<number> {
  const found = findCommand(argv);
  if (!found) throw new UsageError(`unknown command "${argv.join(" ")}"`);
  const database = await openAndMigrate(config, logger);
  try {
    const result = await found.run(database.db, found.rest, config, logger);
    process.stdout.write(JSON.stringify(result, null, 2) + "\n");
    return 0;
  } finally {
    await database.close();
  }
}
