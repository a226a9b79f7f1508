/** The same minimal view in Lit (see view-preact.tsx). */
import { html, LitElement } from "lit";
import { repeat } from "lit/directives/repeat.js";

const ROWS = Array.from({ length: 50 }, (_, i) => ({ id: `acct_${i}`, name: `account ${i}`, balance: i * 1_000_000 }));

class Accounts extends LitElement {
  static properties = { q: { state: true }, clicks: { state: true } };
  q = "";
  clicks = 0;
  render() {
    const rows = ROWS.filter((r) => r.name.includes(this.q));
    return html`<section>
      <input aria-label="Search" .value=${this.q} @input=${(e: Event) => (this.q = (e.target as HTMLInputElement).value)} />
      <button type="button" @click=${() => this.clicks++}>Clicked ${this.clicks}</button>
      <table><tbody>${repeat(rows, (r) => r.id, (r) => html`<tr><td>${r.name}</td><td>${r.id}</td><td>${r.balance}</td></tr>`)}</tbody></table>
    </section>`;
  }
}
customElements.define("x-accounts", Accounts);
document.body.append(document.createElement("x-accounts"));
