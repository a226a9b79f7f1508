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
import { cliAudited } from "./cli-audit.ts";
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
    run: async (db, args, _config, logger) => {
      const { values } = parse(args, { name: { type: "string" }, role: { type: "string" } });
      if (!values.name) throw new UsageError("missing --name");
      const wanted = role(values.role);
      const { token, record } = await cliAudited(db, logger, async (tx, note) => {
        const made = await ops.createOperator(tx, { name: values.name!, role: wanted });
        await note({ action: "operator.create", target: { type: "operator", id: made.record.id }, after: ops.publicOperator(made.record) });
        return made;
      });
      return { ...ops.publicOperator(record), token };
    },
  },
  "operators list": { usage: "operators list", run: async (db) => (await ops.listOperators(db)).map(ops.publicOperator) },
  "operators role": {
    usage: "operators role OPERATOR_ID admin|billing|support|viewer",
    run: async (db, args, _config, logger) => {
      const target = id(args);
      const next = role(parse(args, {}).positionals[1]);
      return cliAudited(db, logger, async (tx, record) => {
        const before = await ops.getOperator(tx, target);
        const after = ops.publicOperator(await ops.updateOperator(tx, target, { role: next }));
        await record({ action: "operator.update", target: { type: "operator", id: target }, before: { name: before.name, role: before.role }, after: { name: after.name, role: after.role } });
        return after;
      });
    },
  },
  "operators revoke": {
    usage: "operators revoke OPERATOR_ID",
    run: async (db, args, _config, logger) => {
      const target = id(args);
      return cliAudited(db, logger, async (tx, record) => {
        const before = await ops.getOperator(tx, target);
        const after = ops.publicOperator(await ops.revokeOperator(tx, target));
        if (!before.revokedAt) await record({ action: "operator.revoke", target: { type: "operator", id: target }, before: ops.publicOperator(before), after });
        return after;
      });
    },
  },
};
