/** The same minimal view in Preact and in Lit (view-lit.ts): a searchable table with a counter button. */
import { render } from "preact";
import { useState } from "preact/hooks";

const ROWS = Array.from({ length: 50 }, (_, i) => ({ id: `acct_${i}`, name: `account ${i}`, balance: i * 1_000_000 }));

function Accounts() {
  const [q, setQ] = useState("");
  const [clicks, setClicks] = useState(0);
  const rows = ROWS.filter((r) => r.name.includes(q));
  return (
    <section>
      <input aria-label="Search" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
      <button type="button" onClick={() => setClicks(clicks + 1)}>Clicked {clicks}</button>
      <table>
        <tbody>{rows.map((r) => <tr key={r.id}><td>{r.name}</td><td>{r.id}</td><td>{r.balance}</td></tr>)}</tbody>
      </table>
    </section>
  );
}

render(<Accounts />, document.body);
