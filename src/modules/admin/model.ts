/** Response schemas of the admin API (what publicAccount / publicKey / listLedger return). */
import { t } from "elysia";

const LimitsView = t.Object({
  requests_per_minute: t.Nullable(t.Integer()),
  tokens_per_minute: t.Nullable(t.Integer()),
  concurrent_video_jobs: t.Nullable(t.Integer()),
});
const noLimits = { requests_per_minute: null, tokens_per_minute: null, concurrent_video_jobs: null };

export const AccountView = t.Object(
  {
    id: t.String(),
    object: t.Literal("account"),
    name: t.String(),
    balance: t.Integer({ description: "micro-dollars" }),
    held: t.Integer({ description: "micro-dollars reserved by open holds" }),
    available: t.Integer({ description: "balance − held" }),
    limits: LimitsView,
    created_at: t.String(),
  },
  { examples: [{ id: "acct_x8Kd", object: "account", name: "acme", balance: 5_000_000, held: 150_000, available: 4_850_000, limits: noLimits, created_at: "2026-11-21T10:00:00.000Z" }] },
);

export const KeyView = t.Object(
  {
    id: t.String(),
    object: t.Literal("api_key"),
    account_id: t.String(),
    name: t.String(),
    prefix: t.String({ description: "visible start of the key, safe to show and log" }),
    scopes: t.Nullable(t.Array(t.String())),
    allowed_models: t.Nullable(t.Array(t.String())),
    limits: LimitsView,
    created_at: t.Nullable(t.String()),
    last_used_at: t.Nullable(t.String()),
    revoked_at: t.Nullable(t.String()),
    key: t.Optional(t.String({ description: "the key itself: only in the answer that creates or rotates it" })),
    replaces: t.Optional(t.String({ description: "rotate: the id of the revoked key" })),
  },
  {
    examples: [
      { id: "key_Qw3r", object: "api_key", account_id: "acct_x8Kd", name: "production", prefix: "rl-AbCd1234", scopes: null, allowed_models: null, limits: noLimits, created_at: "2026-11-21T10:00:00.000Z", last_used_at: null, revoked_at: null, key: "rl-AbCd1234…" },
    ],
  },
);

export const LedgerPage = t.Object(
  {
    object: t.Literal("list"),
    data: t.Array(
      t.Object({
        id: t.Integer(),
        object: t.Literal("ledger_entry"),
        kind: t.String({ description: "grant | hold | release | charge | adjustment | shortfall" }),
        amount: t.Integer({ description: "change to the balance, micro-dollars" }),
        held_change: t.Integer({ description: "change to the held amount" }),
        hold_id: t.Nullable(t.String()),
        ref: t.Nullable(t.String()),
        reason: t.String(),
        created_at: t.String(),
      }),
    ),
    has_more: t.Boolean(),
    next_before: t.Nullable(t.Integer()),
  },
  { examples: [{ object: "list", data: [{ id: 12, object: "ledger_entry", kind: "charge", amount: -150_000, held_change: -150_000, hold_id: "hold_Zx9", ref: "vid_abc", reason: "video preview-motion 5 s", created_at: "2026-11-21T10:05:00.000Z" }], has_more: false, next_before: null }] },
);

export const listOf = <T extends ReturnType<typeof t.Object>>(item: T, example: unknown) =>
  t.Object({ object: t.Literal("list"), data: t.Array(item) }, { examples: [{ object: "list", data: [example] }] });
