/** API keys: the list (prefix, scopes, models, last used) with revoke/rotate, and the create form. */
import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { fmtTime } from "../format.ts";
import { useAction, useLoad } from "../hooks.ts";
import { Budgets } from "./budgets.tsx";
import { Async, Badge, CopyButton, ErrorBox, Field, Table } from "./ui.tsx";

/** The key itself, shown once after create/rotate. */
export function NewKey(p: { secret: string; onDone(): void }) {
  return (
    <div class="new-key" role="status">
      <p><strong>Copy this key now.</strong> reelay stores only its hash; it will not be shown again.</p>
      <div class="row">
        <code class="secret" data-testid="new-key">{p.secret}</code>
        <CopyButton text={p.secret} label="Copy key" />
        <button type="button" class="secondary" onClick={p.onDone}>Done</button>
      </div>
    </div>
  );
}

function KeyActions(p: { api: Api; k: any; onChanged(): void; onSecret(s: string): void }) {
  const [confirm, setConfirm] = useState<"" | "revoke" | "rotate">("");
  const act = useAction(async (what: "revoke" | "rotate") => {
    const r = await p.api.post(`/admin/keys/${p.k.id}/${what}`);
    setConfirm("");
    if (what === "rotate" && r.key) p.onSecret(r.key);
    p.onChanged();
  });
  if (p.k.revoked_at) return <Badge tone="muted">revoked {fmtTime(p.k.revoked_at)}</Badge>;
  return (
    <div class="row tight">
      {confirm ? (
        <>
          <button type="button" class="danger" disabled={act.pending} onClick={() => act.run(confirm)}>Confirm {confirm}</button>
          <button type="button" class="secondary" onClick={() => setConfirm("")}>Cancel</button>
        </>
      ) : (
        <>
          <button type="button" class="secondary" onClick={() => setConfirm("rotate")} aria-label={`Rotate key ${p.k.prefix}`}>Rotate</button>
          <button type="button" class="secondary danger-text" onClick={() => setConfirm("revoke")} aria-label={`Revoke key ${p.k.prefix}`}>Revoke</button>
        </>
      )}
      {act.error && <ErrorBox error={act.error} />}
    </div>
  );
}

export function KeyTable(p: { api: Api; accountId?: string; refresh?: number }) {
  const [revoked, setRevoked] = useState(false);
  const [open, setOpen] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const keys = useLoad((sig) => p.api.get(`/admin/keys?limit=500&include_revoked=${revoked}${p.accountId ? `&account=${encodeURIComponent(p.accountId)}` : ""}`, sig), [p.accountId, revoked, p.refresh]);
  return (
    <>
      {secret && <NewKey secret={secret} onDone={() => setSecret(null)} />}
      <label class="check"><input type="checkbox" checked={revoked} onChange={(e) => setRevoked((e.target as HTMLInputElement).checked)} /> Show revoked keys</label>
      <Async state={keys} empty={(d: any) => d.data.length === 0} emptyText="No keys.">
        {(d: any) => (
          <Table label="API keys">
            <thead><tr><th>Prefix</th><th>Name</th>{!p.accountId && <th>Account</th>}<th>Scopes</th><th>Models</th><th>Created</th><th>Last used</th><th><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {d.data.map((k: any) => [
                <tr class={k.revoked_at ? "dim" : ""}>
                  <td class="mono">{k.prefix}…</td>
                  <td>{k.name}</td>
                  {!p.accountId && <td><a href={`#/accounts/${k.account_id}`}>{k.account_name}</a></td>}
                  <td>{k.scopes ? k.scopes.join(", ") : "all"}</td>
                  <td>{k.allowed_models ? k.allowed_models.join(", ") : "all"}</td>
                  <td>{fmtTime(k.created_at)}</td>
                  <td>{k.last_used_at ? fmtTime(k.last_used_at) : "never"}</td>
                  <td>
                    <div class="row tight">
                      {!k.revoked_at && <button type="button" class="secondary" aria-expanded={open === k.id} aria-label={`Budgets of key ${k.prefix}`} onClick={() => setOpen(open === k.id ? null : k.id)}>Budgets</button>}
                      <KeyActions api={p.api} k={k} onChanged={keys.reload} onSecret={setSecret} />
                    </div>
                  </td>
                </tr>,
                open === k.id && (
                  <tr class="key-budgets">
                    <td colSpan={p.accountId ? 7 : 8}><Budgets api={p.api} path={`/admin/keys/${encodeURIComponent(k.id)}/budgets`} label={`Budgets of key ${k.prefix}`} /></td>
                  </tr>
                ),
              ])}
            </tbody>
          </Table>
        )}
      </Async>
    </>
  );
}

const SCOPES = ["chat", "embeddings", "video"];

export function CreateKey(p: { api: Api; accountId?: string; onCreated(): void }) {
  const [account, setAccount] = useState(p.accountId ?? "");
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<string[]>([]);
  const [models, setModels] = useState<string[]>([]);
  const [secret, setSecret] = useState<string | null>(null);
  const accounts = useLoad((sig) => (p.accountId ? Promise.resolve(null) : p.api.get("/admin/accounts?limit=1000", sig)), [p.accountId]);
  const modelList = useLoad((sig) => p.api.get("/admin/models", sig), []);
  const toggle = (list: string[], v: string, on: boolean) => (on ? [...list, v] : list.filter((x) => x !== v));
  const create = useAction(async () => {
    if (!account) throw new Error("Choose the account the key belongs to.");
    if (!name.trim()) throw new Error("Give the key a name (e.g. production).");
    const r = await p.api.post(`/admin/accounts/${encodeURIComponent(account)}/keys`, { name: name.trim(), scopes: scopes.length ? scopes : null, models: models.length ? models : null });
    setSecret(r.key);
    setName("");
    p.onCreated();
  });
  if (secret) return <NewKey secret={secret} onDone={() => setSecret(null)} />;
  return (
    <form class="stack" onSubmit={(e) => { e.preventDefault(); create.run(); }}>
      {!p.accountId && (
        <Field label="Account">
          <select name="key-account" value={account} onChange={(e) => setAccount((e.target as HTMLSelectElement).value)}>
            <option value="">Choose…</option>
            {(accounts.data?.data ?? []).map((a: any) => <option value={a.id}>{a.name} ({a.id})</option>)}
          </select>
        </Field>
      )}
      <Field label="Key name"><input name="key-name" value={name} maxLength={200} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></Field>
      <fieldset>
        <legend>Scopes (none checked: all)</legend>
        {SCOPES.map((s) => <label class="check"><input type="checkbox" checked={scopes.includes(s)} onChange={(e) => setScopes(toggle(scopes, s, (e.target as HTMLInputElement).checked))} /> {s}</label>)}
      </fieldset>
      <fieldset>
        <legend>Models (none checked: all)</legend>
        {(modelList.data?.data ?? []).map((m: any) => <label class="check"><input type="checkbox" checked={models.includes(m.id)} onChange={(e) => setModels(toggle(models, m.id, (e.target as HTMLInputElement).checked))} /> {m.id}</label>)}
      </fieldset>
      <ErrorBox error={create.error} />
      <button type="submit" disabled={create.pending}>{create.pending ? "Creating…" : "Create key"}</button>
    </form>
  );
}
