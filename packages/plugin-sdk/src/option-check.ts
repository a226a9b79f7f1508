/**
 * A model's options against the plugin's schema, as the host checks them at boot (and the contract
 * runner before `create`): the schema's defaults filled in, then every problem with the option it
 * concerns, the first per option (a missing field gives "is required", not also "expected string").
 */
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";
import { show } from "./checks.ts";

export interface OptionProblem {
  /** dotted path, e.g. "timeouts.idleMs"; "" for the options object itself */
  option: string;
  message: string;
}

export function checkOptions(schema: TSchema, options: Record<string, unknown>): { options: Record<string, unknown>; problems: OptionProblem[] } {
  const filled = Value.Default(schema, Value.Clone(options)) as Record<string, unknown>;
  const problems: OptionProblem[] = [];
  const seen = new Set<string>();
  for (const e of Value.Errors(schema, filled)) {
    const option = e.path.split("/").filter(Boolean).join(".");
    if (seen.has(option)) continue;
    seen.add(option);
    problems.push({ option, message: describe(e) });
  }
  return { options: filled, problems };
}

function describe(e: ValueError): string {
  const got = e.value === undefined ? "" : ` (got ${show(e.value)})`;
  switch (e.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return "unknown option";
    case ValueErrorType.ObjectRequiredProperty:
      return "is required";
    case ValueErrorType.Union: {
      const values = (e.schema.anyOf as Array<{ const?: unknown }> | undefined)?.map((s) => s.const);
      if (values?.length && values.every((v) => v !== undefined)) return `must be one of ${values.map((v) => JSON.stringify(v)).join(", ")}${got}`;
      return `${e.message}${got}`;
    }
    default:
      return `${e.message.replace(/^Expected/, "expected")}${got}`;
  }
}
