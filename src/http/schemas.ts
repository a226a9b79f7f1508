/** Shared OpenAPI/validation schemas. */
import { t } from "elysia";

export const ErrorEnvelope = t.Object(
  {
    error: t.Object({
      message: t.String(),
      type: t.String(),
      param: t.Union([t.String(), t.Null()]),
      code: t.Union([t.String(), t.Null()]),
    }),
  },
  { examples: [{ error: { message: "Invalid API key provided.", type: "authentication_error", param: null, code: "invalid_api_key" } }] },
);

/** the usual error responses of an authenticated route, for the OpenAPI document */
export const authErrors = { 401: ErrorEnvelope, 403: ErrorEnvelope, 429: ErrorEnvelope, 500: ErrorEnvelope };
