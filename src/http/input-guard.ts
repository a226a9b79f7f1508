/**
 * Checks every request's inputs before the route runs, for every route alike:
 * - the JSON body against the route's body schema, strictly (no coercion: `"5"` is not an
 *   integer), with the one plain-words message mapping of validation-message.ts. Elysia's own
 *   validation runs after and then passes; its error path serialised the whole body (20,000 nested
 *   `[` stalled the server 3.4 s), so it never sees a bad body. Checked here, not by Elysia, also
 *   because Elysia's `normalize` "repairs" some invalid bodies instead of refusing them
 *   (`messages: "hi"` became `[{"0": "hi"}]`), and a chat body must reach the upstream as sent.
 * - path parameters and query values for NUL characters (a NUL reaching PostgreSQL was a 500).
 */
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import type { TSchema } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { badRequest } from "../errors.ts";
import { printable } from "./json-body.ts";
import { invalidInput } from "./validation-message.ts";

interface RouteLike {
  method: string;
  path: string;
  hooks?: { body?: unknown };
}

/** method + route template → the compiled body schema, for routes that have one */
export function bodySchemaIndex(routes: RouteLike[]): (method: string, route: string) => TypeCheck<TSchema> | undefined {
  const index = new Map<string, TypeCheck<TSchema>>();
  for (const r of routes) {
    const body = r.hooks?.body;
    if (body && typeof body === "object") index.set(`${r.method} ${r.path}`, TypeCompiler.Compile(body as TSchema));
  }
  return (method, route) => index.get(`${method} ${route}`);
}

export const inputGuard = (bodySchema: (method: string, route: string) => TypeCheck<TSchema> | undefined) =>
  new Elysia({ name: "input-guard" }).onTransform({ as: "global" }, (ctx) => {
    const { request, params, query } = ctx;
    const route = (ctx as { route?: string }).route ?? "";
    for (const [name, value] of Object.entries(params ?? {})) {
      if (typeof value === "string" && value.includes("\0")) throw nulIn("path parameter", name);
    }
    for (const [name, value] of Object.entries(query ?? {})) {
      const values = Array.isArray(value) ? value : [value];
      if (name.includes("\0") || values.some((v) => typeof v === "string" && v.includes("\0"))) throw nulIn("query parameter", name);
    }
    const check = bodySchema(request.method, route);
    const body = (ctx as { body?: unknown }).body;
    if (check && !check.Check(body)) throw invalidInput(check, body);
  });

function nulIn(what: string, name: string) {
  const param = printable(name, 60);
  return badRequest(`The ${what} '${param}' contains a NUL character (\\u0000), which is not allowed.`, param, "invalid_value");
}
