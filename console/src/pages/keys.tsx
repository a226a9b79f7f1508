import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { CreateKey, KeyTable } from "../components/keys.tsx";
import { Card } from "../components/ui.tsx";

export function Keys(p: { api: Api }) {
  const [refresh, setRefresh] = useState(0);
  return (
    <>
      <div class="page-head"><h1>API keys</h1></div>
      <div class="grid-2 wide-left">
        <Card title="All keys"><KeyTable api={p.api} refresh={refresh} /></Card>
        <Card title="Create a key"><CreateKey api={p.api} onCreated={() => setRefresh((r) => r + 1)} /></Card>
      </div>
    </>
  );
}
