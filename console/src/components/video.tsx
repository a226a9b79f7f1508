/** Plays a finished job's MP4: the API returns it base64-encoded; the player gets a same-origin blob: URL. */
import { useEffect, useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { ErrorBox, Loading } from "./ui.tsx";

export function b64ToBlobUrl(b64: string, type = "video/mp4"): string {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return URL.createObjectURL(new Blob([bytes], { type }));
}

export function VideoFromJob(p: { api: Api; path: string; label: string }) {
  const [url, setUrl] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    let made: string | null = null;
    p.api.get(p.path, ctl.signal).then(
      (job) => {
        const b64 = job?.data?.[0]?.b64_json;
        if (!b64) return setError("This job has no video to play.");
        made = b64ToBlobUrl(b64);
        setUrl(made);
      },
      (e) => !ctl.signal.aborted && setError(e.message),
    );
    return () => {
      ctl.abort();
      if (made) URL.revokeObjectURL(made);
    };
  }, [p.path]);
  if (error) return <ErrorBox error={error} />;
  if (!url) return <Loading label="Loading video…" />;
  return <video class="player" src={url} controls autoplay muted loop playsInline aria-label={p.label} />;
}
