import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { Async, Card, CopyButton, ErrorBox, Field, Table } from "../components/ui.tsx";
import { fmtTime } from "../format.ts";
import { useAction, useLoad } from "../hooks.ts";

const ROLES = ["admin", "billing", "support", "viewer"];

/** Operators: create (the token shown once), change a role, revoke. Changes need the admin role. */
export function Operators(p: { api: Api }) {
  const [refresh, setRefresh] = useState(0);
  const list = useLoad((sig) => p.api.get("/admin/operators", sig), [refresh]);
  const [name, setName] = useState("");
  const [role, setRole] = useState("viewer");
  const [made, setMade] = useState<{ name: string; token: string } | null>(null);
  const create = useAction(async () => {
    if (!name.trim()) throw new Error("Give the operator a name.");
    const op = await p.api.post("/admin/operators", { name: name.trim(), role });
    setMade({ name: op.name, token: op.token });
    setName("");
    setRefresh((r) => r + 1);
  });
  const change = useAction(async (id: string, body: unknown, revoke = false) => {
    if (revoke) await p.api.post(`/admin/operators/${id}/revoke`);
    else await p.api.patch(`/admin/operators/${id}`, body);
    setRefresh((r) => r + 1);
  });
  return (
    <>
      <div class="page-head"><h1>Operators</h1></div>
      <div class="grid-2 wide-left">
        <Card title="Operators">
          <ErrorBox error={change.error} />
          <Async state={list} empty={(d: any) => d.data.length === 0} emptyText="No operators yet: only the bootstrap token.">
            {(d: any) => (
              <Table label="Operators">
                <thead><tr><th>Name</th><th>Role</th><th>Token</th><th>Created</th><th /></tr></thead>
                <tbody>
                  {d.data.map((o: any) => (
                    <tr>
                      <td>{o.name}<div class="mono muted">{o.id}</div></td>
                      <td>
                        {o.revoked_at ? o.role : (
                          <select aria-label={`Role of ${o.name}`} value={o.role} onChange={(e) => change.run(o.id, { role: (e.target as HTMLSelectElement).value })}>
                            {ROLES.map((r) => <option value={r}>{r}</option>)}
                          </select>
                        )}
                      </td>
                      <td class="mono">{o.token_prefix}…</td>
                      <td>{fmtTime(o.created_at)}</td>
                      <td>{o.revoked_at ? `revoked ${fmtTime(o.revoked_at)}` : <button type="button" class="secondary" onClick={() => change.run(o.id, null, true)}>Revoke</button>}</td>
                    </tr>
                  ))}
                </tbody>
              </Table>
            )}
          </Async>
        </Card>
        <Card title="New operator">
          <form class="stack" onSubmit={(e) => { e.preventDefault(); create.run(); }}>
            <Field label="Name"><input name="operator-name" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} maxLength={200} /></Field>
            <Field label="Role">
              <select name="operator-role" value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value)}>
                {ROLES.map((r) => <option value={r}>{r}</option>)}
              </select>
            </Field>
            <ErrorBox error={create.error} />
            <button type="submit" disabled={create.pending}>{create.pending ? "Creating…" : "Create operator"}</button>
          </form>
          {made && (
            <div class="notice" role="status">
              <p>{made.name}'s personal token, shown this once:</p>
              <p class="mono">{made.token}</p>
              <CopyButton text={made.token} />
            </div>
          )}
        </Card>
      </div>
    </>
  );
}
