import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { Async, Card, ErrorBox, Field, Table } from "../components/ui.tsx";
import { UsdInput, usdState } from "../components/usd-input.tsx";
import { fmtTime } from "../format.ts";
import { useAction, useLoad } from "../hooks.ts";
import { formatUsd } from "../money.ts";
import { go } from "../router.ts";

const PAGE = 50;

export function Accounts(p: { api: Api }) {
  const [search, setSearch] = useState("");
  const [applied, setApplied] = useState("");
  const [offset, setOffset] = useState(0);
  const list = useLoad((sig) => p.api.get(`/admin/accounts?limit=${PAGE + 1}&offset=${offset}${applied ? `&search=${encodeURIComponent(applied)}` : ""}`, sig), [applied, offset]);
  const [name, setName] = useState("");
  const [credits, setCredits] = useState("");
  const create = useAction(async () => {
    const amount = usdState(credits, { optional: true });
    if (!amount.ok) throw new Error(amount.error);
    if (!name.trim()) throw new Error("Give the account a name.");
    const acct = await p.api.post("/admin/accounts", { name: name.trim(), credits: amount.micros });
    go(`accounts/${acct.id}`);
  });
  return (
    <>
      <div class="page-head"><h1>Accounts</h1></div>
      <div class="grid-2">
        <Card title="Find an account">
          <form class="row" role="search" onSubmit={(e) => { e.preventDefault(); setOffset(0); setApplied(search.trim()); }}>
            <input type="search" aria-label="Search accounts by name or id" placeholder="name or acct_…" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
            <button type="submit">Search</button>
          </form>
          <Async state={list} empty={(d: any) => d.data.length === 0} emptyText={applied ? `No account matches “${applied}”.` : "No accounts yet: create one."}>
            {(d: any) => (
              <>
                <Table label="Accounts">
                  <thead><tr><th>Name</th><th>Id</th><th class="num">Balance</th><th class="num">Available</th><th>Created</th></tr></thead>
                  <tbody>
                    {d.data.slice(0, PAGE).map((a: any) => (
                      <tr>
                        <td><a href={`#/accounts/${a.id}`}>{a.name}</a></td>
                        <td class="mono">{a.id}</td>
                        <td class="num">{formatUsd(a.balance)}</td>
                        <td class="num">{formatUsd(a.available)}</td>
                        <td>{fmtTime(a.created_at)}</td>
                      </tr>
                    ))}
                  </tbody>
                </Table>
                <div class="pager">
                  <button type="button" class="secondary" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>Previous</button>
                  <button type="button" class="secondary" disabled={d.data.length <= PAGE} onClick={() => setOffset(offset + PAGE)}>Next</button>
                </div>
              </>
            )}
          </Async>
        </Card>
        <Card title="New account">
          <form class="stack" onSubmit={(e) => { e.preventDefault(); create.run(); }}>
            <Field label="Name"><input name="account-name" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} maxLength={200} /></Field>
            <UsdInput name="initial-credits" label="Initial credits (USD)" value={credits} onInput={setCredits} optional />
            <ErrorBox error={create.error} />
            <button type="submit" disabled={create.pending}>{create.pending ? "Creating…" : "Create account"}</button>
          </form>
        </Card>
      </div>
    </>
  );
}
