/**
 * `reelay operators …`: operator accounts from the command line (the same functions as
 * /admin/operators), printing JSON. The first operator of a fresh install can be made here, with
 * no REELAY_ADMIN_TOKEN at all.
 *
 *   reelay operators create --name NAME --role admin|billing|support|viewer   (prints the token once)
 *   reelay operators list
 *   reelay operators role OPERATOR_ID ROLE
 *   reelay operators revoke OPERATOR_ID
 */
import { parseArgs } from "node:util";
import * as ops from "../operators/operators.ts";
import { ROLES, type Role } from "../operators/roles.ts";
import { UsageError, type Command } from "./commands.ts";

function parse(args: string[], options: Record<string, { type: "string" }>) {
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | undefined>, positionals };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

function role(raw: string | undefined): Role {
  if (!raw) throw new UsageError("missing role");
  if (!(ROLES as string[]).includes(raw)) throw new UsageError(`role must be one of ${ROLES.join(", ")}`);
  return raw as Role;
}

function id(args: string[], at = 0): string {
  const value = parse(args, {}).positionals[at];
  if (!value) throw new UsageError("missing OPERATOR_ID");
  return value;
}

export const OPERATOR_COMMANDS: Record<string, { usage: string; run: Command }> = {
  "operators create": {
    usage: "operators create --name NAME --role admin|billing|support|viewer   (prints the personal token once)",
    run: async (db, args) => {
      const { values } = parse(args, { name: { type: "string" }, role: { type: "string" } });
      if (!values.name) throw new UsageError("missing --name");
      const { token, record } = await db.transaction((tx) => ops.createOperator(tx, { name: values.name!, role: role(values.role) }));
      return { ...ops.publicOperator(record), token };
    },
  },
  "operators list": { usage: "operators list", run: async (db) => (await ops.listOperators(db)).map(ops.publicOperator) },
  "operators role": {
    usage: "operators role OPERATOR_ID admin|billing|support|viewer",
    run: async (db, args) => {
      const target = id(args);
      const next = role(parse(args, {}).positionals[1]);
      return ops.publicOperator(await db.transaction((tx) => ops.updateOperator(tx, target, { role: next })));
    },
  },
  "operators revoke": {
    usage: "operators revoke OPERATOR_ID",
    run: async (db, args) => ops.publicOperator(await db.transaction((tx) => ops.revokeOperator(tx, id(args)))),
  },
};
