import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { identify, ssoEnabled } from "../api.ts";
import { ErrorBox } from "../components/ui.tsx";
import type { Session } from "../session.ts";

export function SignIn(p: { notice: string | null; onSignedIn(s: Session): void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const field = useRef<HTMLInputElement>(null);
  const [sso, setSso] = useState(false);
  useEffect(() => void ssoEnabled().then(setSso), []);
  // `autofocus` works on the page's first load only: after signing out, focus would be left on the
  // document and a keyboard user would have to Tab to the field. A layout effect runs in the same
  // commit that inserts the field, so the field is never on screen without focus: a plain effect
  // waits for the next frame plus a task, and a keyboard user (or a test) typing in that gap typed
  // into the document (CI on a fresh machine lost the first characters of a key that way).
  useLayoutEffect(() => field.current?.focus(), []);
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
          <input ref={field} type="password" name="token" autocomplete="off" spellcheck={false} value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        </label>
        <ErrorBox error={error} />
        <button type="submit" disabled={pending}>{pending ? "Checking…" : "Sign in"}</button>
        {sso && <p><a class="button secondary" href="/sso/login">Sign in with single sign-on</a></p>}
      </form>
    </main>
  );
}
