/**
 * The console's only way to the server: reelay's public HTTP API, same origin, with the signed-in
 * credential as a Bearer header (never in a URL). Errors arrive as the OpenAI envelope.
 */
export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly code: string | null = null, readonly param: string | null = null) {
    super(message);
  }
}

export interface Api {
  get<T = any>(path: string, signal?: AbortSignal): Promise<T>;
  post<T = any>(path: string, body?: unknown, signal?: AbortSignal): Promise<T>;
  patch<T = any>(path: string, body: unknown): Promise<T>;
  put<T = any>(path: string, body: unknown): Promise<T>;
  /** the raw response (streams); throws ApiError on a non-2xx status */
  fetch(path: string, init: RequestInit): Promise<Response>;
}

async function toError(res: Response): Promise<ApiError> {
  let body: any = null;
  try {
    body = await res.json();
  } catch {}
  const e = body?.error;
  if (e?.message) return new ApiError(res.status, e.message, e.code ?? null, e.param ?? null);
  return new ApiError(res.status, `The server answered ${res.status} ${res.statusText}.`);
}

/** `token`: a Bearer credential; or an SSO session (its cookie goes by itself) with its CSRF token for changes */
export function createApi(token: string, onUnauthorized: () => void, csrf?: string): Api {
  const request = async (path: string, init: RequestInit): Promise<Response> => {
    const headers = new Headers(init.headers);
    if (token) headers.set("authorization", `Bearer ${token}`);
    else if (csrf && init.method && init.method !== "GET") headers.set("x-csrf-token", csrf);
    let res: Response;
    try {
      res = await fetch(path, { ...init, headers, cache: "no-store" });
    } catch (e) {
      if ((e as Error).name === "AbortError") throw e;
      throw new ApiError(0, "Cannot reach the server. Check that reelay is running, then retry.");
    }
    if (!res.ok) {
      const err = await toError(res);
      if (res.status === 401) onUnauthorized();
      throw err;
    }
    return res;
  };
  const json = async (path: string, init: RequestInit) => {
    const res = await request(path, init);
    return res.status === 204 ? null : res.json();
  };
  const withBody = (method: string, body: unknown, signal?: AbortSignal): RequestInit => ({
    method,
    signal,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return {
    get: (path, signal) => json(path, { signal }),
    post: (path, body, signal) => json(path, withBody("POST", body ?? {}, signal)),
    patch: (path, body) => json(path, withBody("PATCH", body)),
    put: (path, body) => json(path, withBody("PUT", body)),
    fetch: request,
  };
}

/** Check a credential once, without side effects, and say which view it opens. */
export async function identify(token: string): Promise<{ role: "operator" | "client"; label: string }> {
  const isKey = token.startsWith("rl-");
  const res = await fetch(isKey ? "/v1/account" : "/admin/me", { headers: { authorization: `Bearer ${token}` }, cache: "no-store" }).catch(() => null);
  if (!res) throw new ApiError(0, "Cannot reach the server. Check that reelay is running, then retry.");
  if (res.ok) {
    const body = await res.json();
    // an operator token names its person and role; the bootstrap token stays "operator"
    return isKey ? { role: "client", label: `key ${body.key_prefix}…` } : { role: "operator", label: body.type === "bootstrap" ? "operator" : `${body.name} (${body.role})` };
  }
  const err = await toError(res);
  if (res.status === 401) throw new ApiError(401, isKey ? "That API key is not valid: it may be mistyped or revoked." : err.message.includes("disabled") ? err.message : "Wrong admin token.");
  throw err;
}

/** An SSO session the browser already holds (its cookie), as a console session; null if none. */
export async function ssoSession(): Promise<{ token: ""; role: "operator"; label: string; sso: true; csrf: string } | null> {
  const res = await fetch("/sso/config", { cache: "no-store" }).catch(() => null);
  const s = res?.ok ? (await res.json()).session : null;
  return s ? { token: "", role: "operator", label: `${s.name} (${s.role})`, sso: true, csrf: s.csrf_token } : null;
}

/** Whether the server offers single sign-on. */
export async function ssoEnabled(): Promise<boolean> {
  const res = await fetch("/sso/config", { cache: "no-store" }).catch(() => null);
  return res?.ok ? Boolean((await res.json()).enabled) : false;
}

export const ssoSignOut = (csrf: string) => fetch("/sso/logout", { method: "POST", headers: { "x-csrf-token": csrf } }).catch(() => null);
