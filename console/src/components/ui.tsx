import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { Loaded } from "../hooks.ts";

export function Card(p: { title?: ComponentChildren; actions?: ComponentChildren; children: ComponentChildren; class?: string }) {
  return (
    <section class={`card ${p.class ?? ""}`}>
      {(p.title || p.actions) && (
        <header class="card-head">
          {p.title && <h2>{p.title}</h2>}
          {p.actions && <div class="card-actions">{p.actions}</div>}
        </header>
      )}
      {p.children}
    </section>
  );
}

export function Stat(p: { label: string; value: ComponentChildren; hint?: ComponentChildren; tone?: "ok" | "warn" | "bad" }) {
  return (
    <div class={`stat ${p.tone ?? ""}`}>
      <div class="stat-label">{p.label}</div>
      <div class="stat-value">{p.value}</div>
      {p.hint && <div class="stat-hint">{p.hint}</div>}
    </div>
  );
}

export const ErrorBox = (p: { error: string | Error | null; onRetry?: () => void }) =>
  p.error ? (
    <div class="error" role="alert">
      <span>{typeof p.error === "string" ? p.error : p.error.message}</span>
      {p.onRetry && <button type="button" class="link" onClick={p.onRetry}>Retry</button>}
    </div>
  ) : null;

export const Loading = (p: { label?: string }) => <div class="loading" role="status" aria-live="polite"><span class="spinner" aria-hidden="true" />{p.label ?? "Loading…"}</div>;

/** Loading / error / empty / content for one loaded resource. */
export function Async<T>(p: { state: Loaded<T>; empty?: (d: T) => boolean; emptyText?: string; children: (d: T) => ComponentChildren }) {
  const { data, error, loading, reload } = p.state;
  if (error && !data) return <ErrorBox error={error} onRetry={reload} />;
  if (!data) return loading ? <Loading /> : null;
  return (
    <>
      {error && <ErrorBox error={error} onRetry={reload} />}
      {p.empty?.(data) ? <p class="empty">{p.emptyText ?? "Nothing here yet."}</p> : p.children(data)}
    </>
  );
}

export const Badge = (p: { tone?: string; children: ComponentChildren }) => <span class={`badge ${p.tone ?? ""}`}>{p.children}</span>;

export const statusTone = (s: string) => ({ completed: "ok", healthy: "ok", ready: "ok", failed: "bad", failing: "bad", expired: "muted", idle: "muted", degraded: "warn", processing: "info", queued: "info", loading: "info", unloaded: "muted" })[s] ?? "";

export function CopyButton(p: { text: string; label?: string }) {
  const [done, setDone] = useState<"" | "copied" | "failed">("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(p.text);
      setDone("copied");
    } catch {
      setDone("failed");
    }
    setTimeout(() => setDone(""), 2000);
  };
  return (
    <button type="button" class="secondary" onClick={copy} aria-live="polite">
      {done === "copied" ? "Copied" : done === "failed" ? "Copy failed: select and copy" : (p.label ?? "Copy")}
    </button>
  );
}

export const Table = (p: { children: ComponentChildren; label: string }) => (
  <div class="table-wrap" role="region" aria-label={p.label} tabIndex={0}>
    <table>{p.children}</table>
  </div>
);

export function Field(p: { label: string; children: ComponentChildren; hint?: string }) {
  return (
    <label class="field">
      <span class="field-label">{p.label}</span>
      {p.children}
      {p.hint && <span class="field-hint">{p.hint}</span>}
    </label>
  );
}

export function Segmented<T extends string>(p: { label: string; value: T; options: Array<[T, string]>; onChange(v: T): void }) {
  return (
    <div class="segmented" role="radiogroup" aria-label={p.label}>
      {p.options.map(([v, text]) => (
        <button type="button" role="radio" aria-checked={p.value === v} class={p.value === v ? "on" : ""} onClick={() => p.onChange(v)}>
          {text}
        </button>
      ))}
    </div>
  );
}
