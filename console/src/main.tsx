import "uplot/dist/uPlot.min.css";
import "./styles.css";
import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { createApi, ssoSession, ssoSignOut } from "./api.ts";
import { Layout } from "./components/layout.tsx";
import { ClientHome } from "./pages/client-home.tsx";
import { ClientJobs } from "./pages/client-jobs.tsx";
import { ClientBatches } from "./pages/client-batches.tsx";
import { Playground } from "./pages/playground.tsx";
import { AccountDetail } from "./pages/account-detail.tsx";
import { Accounts } from "./pages/accounts.tsx";
import { Keys } from "./pages/keys.tsx";
import { Models } from "./pages/models.tsx";
import { Overview } from "./pages/overview.tsx";
import { SignIn } from "./pages/sign-in.tsx";
import { Videos } from "./pages/videos.tsx";
import { Batches } from "./pages/batches.tsx";
import { AuditLog } from "./pages/audit-log.tsx";
import { Operators } from "./pages/operators.tsx";
import { go, useRoute } from "./router.ts";
import { clearSession, loadSession, saveSession, type Session } from "./session.ts";

const OPERATOR_NAV: Array<[string, string]> = [["overview", "Overview"], ["accounts", "Accounts"], ["keys", "Keys"], ["videos", "Video jobs"], ["batches", "Batches"], ["models", "Models"], ["operators", "Operators"], ["audit", "Audit log"]];
const CLIENT_NAV: Array<[string, string]> = [["home", "Usage"], ["jobs", "Video jobs"], ["batches", "Batches"], ["playground", "Playground"]];

function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const [notice, setNotice] = useState<string | null>(null);
  const route = useRoute();
  // back from the identity provider: the session is a cookie this script cannot read; /admin/me says who it is
  useEffect(() => {
    if (!session) void ssoSession().then((s) => s && (saveSession(s), setSession(s), go("overview")));
  }, []);
  const signOut = (message: string | null = null) => {
    if (session?.sso && session.csrf) void ssoSignOut(session.csrf);
    clearSession();
    setSession(null);
    setNotice(message);
    go("");
  };
  const api = useMemo(() => (session ? createApi(session.token, () => signOut(session.sso ? "Your session ended (expired or signed out). Sign in again." : "Your credential was refused (revoked or changed). Sign in again."), session.csrf) : null), [session?.token, session?.csrf]);

  if (!session || !api) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          saveSession(s);
          setNotice(null);
          setSession(s);
          go(s.role === "operator" ? "overview" : "home");
        }}
      />
    );
  }
  const nav = session.role === "operator" ? OPERATOR_NAV : CLIENT_NAV;
  const page = route[0] && nav.some(([k]) => k === route[0]) ? route[0] : nav[0]![0];
  let body;
  if (session.role === "operator") {
    if (page === "accounts" && route[1]) body = <AccountDetail api={api} id={route[1]} />;
    else if (page === "accounts") body = <Accounts api={api} />;
    else if (page === "keys") body = <Keys api={api} />;
    else if (page === "videos") body = <Videos api={api} />;
    else if (page === "batches") body = <Batches api={api} />;
    else if (page === "models") body = <Models api={api} />;
    else if (page === "operators") body = <Operators api={api} />;
    else if (page === "audit") body = <AuditLog api={api} />;
    else body = <Overview api={api} />;
  } else {
    if (page === "jobs") body = <ClientJobs api={api} />;
    else if (page === "batches") body = <ClientBatches api={api} />;
    else if (page === "playground") body = <Playground api={api} />;
    else body = <ClientHome api={api} />;
  }
  return (
    <Layout nav={nav} current={page} who={session.label} role={session.role} onSignOut={() => signOut()}>
      {body}
    </Layout>
  );
}

const root = document.getElementById("app")!;
root.textContent = ""; // the "Loading…" placeholder shown until this script runs
render(<App />, root);
