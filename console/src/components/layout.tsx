import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";

export function Layout(p: { nav: Array<[string, string]>; current: string; who: string; role: string; onSignOut(): void; children: ComponentChildren }) {
  const main = useRef<HTMLElement>(null);
  const title = p.nav.find(([k]) => k === p.current)?.[1] ?? "";
  useEffect(() => {
    document.title = `${title} · reelay console`;
  }, [title]);
  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); main.current?.focus(); }}>Skip to content</a>
      <header class="top">
        <div class="brand">reelay <span>{p.role === "operator" ? "operator" : "client"}</span></div>
        <nav aria-label="Main">
          {p.nav.map(([k, label]) => (
            <a href={`#/${k}`} aria-current={k === p.current ? "page" : undefined}>{label}</a>
          ))}
        </nav>
        <div class="who">
          <span title="signed in as">{p.who}</span>
          <button type="button" class="secondary" onClick={p.onSignOut}>Sign out</button>
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {p.children}
      </main>
    </div>
  );
}
