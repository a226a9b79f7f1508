/**
 * CLI views of usage (the same queries as GET /admin/usage/*): `reelay usage accounts|models|top-accounts|failing-upstreams`.
 * Bad dates are ApiErrors from parseRange, which main.ts prints as a one-line message.
 */
import { parseArgs } from "node:util";
import type { Db } from "../db/index.ts";
import { badRequest } from "../errors.ts";
import { failingUpstreams, parseRange, usageByAccount, usageByModel } from "../ops/usage-views.ts";

type Command = (db: Db, args: string[]) => Promise<unknown>;

function rangeArgs(args: string[], extra: Record<string, { type: "string" }> = {}) {
  const { values } = parseArgs({ args, options: { from: { type: "string" }, to: { type: "string" }, ...extra }, strict: true });
  const v = values as Record<string, string | undefined>;
  return { range: parseRange(v.from, v.to), values: v };
}

const RANGE = "[--from ISO] [--to ISO]";

export const USAGE_COMMANDS: Record<string, { usage: string; run: Command }> = {
  "usage accounts": {
    usage: `usage accounts ${RANGE} [--account ACCOUNT_ID]   (default range: the last 24 h)`,
    run: async (db, args) => {
      const { range, values } = rangeArgs(args, { account: { type: "string" } });
      return { from: range.from, to: range.to, data: await usageByAccount(db, range, { accountId: values.account }) };
    },
  },
  "usage models": {
    usage: `usage models ${RANGE} [--account ACCOUNT_ID]`,
    run: async (db, args) => {
      const { range, values } = rangeArgs(args, { account: { type: "string" } });
      return { from: range.from, to: range.to, data: await usageByModel(db, range, { accountId: values.account }) };
    },
  },
  "usage top-accounts": {
    usage: `usage top-accounts ${RANGE} [--limit N]`,
    run: async (db, args) => {
      const { range, values } = rangeArgs(args, { limit: { type: "string" } });
      const limit = values.limit === undefined ? 10 : Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw badRequest("--limit must be an integer from 1 to 1000", "limit");
      return { from: range.from, to: range.to, data: await usageByAccount(db, range, { limit }) };
    },
  },
  "usage failing-upstreams": {
    usage: `usage failing-upstreams ${RANGE}`,
    run: async (db, args) => {
      const { range } = rangeArgs(args);
      return { from: range.from, to: range.to, data: await failingUpstreams(db, range) };
    },
  },
};
