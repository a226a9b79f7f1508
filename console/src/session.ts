/** The signed-in credential lives in sessionStorage only: gone when the tab closes, never in a URL. */
export interface Session {
  token: string;
  role: "operator" | "client";
  label: string;
  /** signed in through single sign-on: the credential is an HttpOnly cookie, not `token`; `csrf` goes with each change */
  sso?: boolean;
  csrf?: string;
}

const KEY = "reelay.console.session";

export function loadSession(): Session | null {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY) ?? "null");
    return s && typeof s.token === "string" && (s.role === "operator" || s.role === "client") ? s : null;
  } catch {
    return null;
  }
}

export const saveSession = (s: Session) => sessionStorage.setItem(KEY, JSON.stringify(s));
export const clearSession = () => sessionStorage.removeItem(KEY);
