/**
 * A model's options are declared as a schema built with TypeBox's `Type` (re-exported here, so a
 * plugin needs no other package), for example
 *
 *   options: Type.Object({
 *     baseUrl: Type.String({ pattern: "^https?://", description: "the server, e.g. http://localhost:11434" }),
 *     keepAlive: Type.Optional(Type.String({ default: "5m" })),
 *   }, { additionalProperties: false }),
 *
 * The host checks every model's options against it at boot, fills in `default`s, and stops with
 * one line per problem naming the plugin, the model and the option. `Static<typeof schema>` is the
 * options' type (definePlugin types `ctx.options` with it).
 */
export { Type, type Static, type TSchema, type TObject } from "@sinclair/typebox";
