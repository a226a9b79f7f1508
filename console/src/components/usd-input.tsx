/** A USD amount field: what the person types is parsed exactly (money.ts) and the micro-dollars shown. */
import { formatUsd, parseUsd, type Parsed } from "../money.ts";

export function usdState(text: string, opts: { signed?: boolean; optional?: boolean } = {}): Parsed & { empty: boolean } {
  if (text.trim() === "") return opts.optional ? { ok: true, micros: 0, empty: true } : { ok: false, error: "Enter an amount in USD.", empty: true };
  return { ...parseUsd(text, { signed: opts.signed }), empty: false };
}

export function UsdInput(p: { label: string; value: string; onInput(v: string): void; signed?: boolean; optional?: boolean; name: string }) {
  const st = usdState(p.value, p);
  const hintId = `${p.name}-hint`;
  return (
    <label class="field">
      <span class="field-label">{p.label}</span>
      <div class="usd">
        <span aria-hidden="true">$</span>
        <input name={p.name} inputMode="decimal" autocomplete="off" placeholder={p.signed ? "-2.50" : "5.00"} value={p.value} aria-describedby={hintId} aria-invalid={!st.ok && !st.empty}
          onInput={(e) => p.onInput((e.target as HTMLInputElement).value)} />
      </div>
      <span id={hintId} class={`field-hint ${!st.ok && !st.empty ? "bad" : ""}`}>
        {st.empty ? (p.optional ? "optional" : " ") : st.ok ? `${formatUsd(st.micros)} = ${st.micros.toLocaleString("en-US")} micro-dollars` : st.error}
      </span>
    </label>
  );
}
