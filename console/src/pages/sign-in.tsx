import { useState } from "preact/hooks";
import { identify } from "../api.ts";
import { ErrorBox } from "../components/ui.tsx";
import type { Session } from "../session.ts";

export function SignIn(p: { notice: string | null; onSignedIn(s: Session): void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) return setError("Paste the admin token or an API key.");
    setPending(true);
    setError(null);
    try {
      const who = await identify(t);
      p.onSignedIn({ token: t, ...who });
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setPending(false);
    }
  };
  return (
    <main class="signin">
      <form class="card" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">reelay console</h1>
        <p class="muted">Sign in with the operator's admin token (<code>REELAY_ADMIN_TOKEN</code>) or with an API key (<code>rl-…</code>). It is kept in this tab only and sent as a Bearer header.</p>
        {p.notice && <p class="notice" role="status">{p.notice}</p>}
        <label class="field">
          <span class="field-label">Admin token or API key</span>
          <input type="password" name="token" autocomplete="off" spellcheck={false} autoFocus value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        </label>
        <ErrorBox error={error} />
        <button type="submit" disabled={pending}>{pending ? "Checking…" : "Sign in"}</button>
      </form>
    </main>
  );
}
