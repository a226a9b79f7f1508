/** Request and response schemas of the operator routes (responses: what publicOperator returns). */
import { t } from "elysia";

const RoleField = t.Union([t.Literal("admin"), t.Literal("billing"), t.Literal("support"), t.Literal("viewer")], {
  description: "admin: everything; billing: accounts, credits, plans, budgets, keys; support: read everything, cancel jobs, replay webhooks; viewer: read-only",
});

export const CreateOperatorBody = t.Object(
  { name: t.String({ minLength: 1, maxLength: 200 }), role: RoleField },
  { examples: [{ name: "Ada Lovelace", role: "billing" }] },
);

export const UpdateOperatorBody = t.Object(
  { role: t.Optional(RoleField), name: t.Optional(t.String({ minLength: 1, maxLength: 200 })) },
  { examples: [{ role: "support" }] },
);

const operatorExample = {
  id: "op_3kT9xQ2mB7vLp0aZc1Rd", object: "operator", name: "Ada Lovelace", role: "billing", token_prefix: "ro-AbCd1234",
  created_at: "2026-11-27T15:00:00.000Z", updated_at: "2026-11-27T15:00:00.000Z", revoked_at: null,
};

export const OperatorView = t.Object(
  {
    id: t.String(),
    object: t.Literal("operator"),
    name: t.String(),
    role: RoleField,
    token_prefix: t.String({ description: "the token's first characters, safe to show" }),
    created_at: t.String(),
    updated_at: t.String(),
    revoked_at: t.Nullable(t.String()),
  },
  { examples: [operatorExample] },
);

export const CreatedOperator = t.Object(
  { ...OperatorView.properties, token: t.String({ description: "the personal token: in this answer only (reelay stores its hash)" }) },
  { examples: [{ ...operatorExample, token: "ro-AbCd1234…" }] },
);

export const OperatorList = t.Object({ object: t.Literal("list"), data: t.Array(OperatorView) }, { examples: [{ object: "list", data: [operatorExample] }] });

export const MeView = t.Object(
  {
    type: t.Union([t.Literal("bootstrap"), t.Literal("operator"), t.Literal("sso"), t.Literal("cli")], { description: "bootstrap: REELAY_ADMIN_TOKEN; operator: a personal token; sso: a console session (cli: the reelay command on the host, in the audit log only)" }),
    id: t.Nullable(t.String()),
    name: t.String(),
    role: RoleField,
    csrf_token: t.Optional(t.String({ description: "console SSO sessions only: send it as `x-csrf-token` on every state-changing call" })),
  },
  { examples: [{ type: "operator", id: "op_3kT9xQ2mB7vLp0aZc1Rd", name: "Ada Lovelace", role: "billing" }] },
);
