/** Try the models: streamed chat, embeddings with a similarity matrix, image-to-video. */
import { createParser } from "eventsource-parser";
import { useEffect, useRef, useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { Badge, Card, ErrorBox, Field, Loading, Segmented, statusTone } from "../components/ui.tsx";
import { b64ToBlobUrl } from "../components/video.tsx";
import { useAction, useLoad } from "../hooks.ts";
import { formatUsd } from "../money.ts";
import { go, useRoute } from "../router.ts";
import { decodeEmbedding, similarityMatrix } from "../similarity.ts";
import { sizeFor } from "../video-size.ts";

type Tab = "chat" | "embeddings" | "video";

/** The usage row of a request (ref = its x-request-id, or a job id), once billing has written it. */
async function costOf(api: Api, ref: string, signal?: AbortSignal): Promise<any | null> {
  for (let i = 0; i < 20 && !signal?.aborted; i++) {
    const page = await api.get("/v1/usage?limit=50", signal);
    const row = page.data.find((u: any) => u.ref === ref);
    if (row) return row;
    await new Promise((r) => setTimeout(r, 250 * Math.min(4, i + 1)));
  }
  return null;
}

function Cost(p: { row: any | null | undefined }) {
  if (p.row === undefined) return null;
  if (p.row === null) return <p class="muted small">The charge is not recorded yet; see Usage.</p>;
  const r = p.row;
  return (
    <p class="cost" data-testid="cost">
      Cost <strong>{formatUsd(r.cost)}</strong>
      {r.prompt_tokens !== null && <> · {r.prompt_tokens} input tokens</>}
      {r.completion_tokens !== null && <> · {r.completion_tokens} output tokens</>}
      {r.seconds !== null && <> · {r.seconds} s of video</>}
    </p>
  );
}

function ModelSelect(p: { models: any[]; capability: Tab; value: string; onChange(v: string | ((current: string) => string)): void }) {
  // /v1/models may say what a model does; if it does not, every model is offered
  const fits = (m: any) => {
    const caps = m.capabilities ?? (m.capability ? [m.capability] : null);
    return !caps || caps.includes(p.capability);
  };
  const list = p.models.filter(fits);
  const ids = list.map((m) => m.id);
  useEffect(() => {
    // the first model by default — unless one was chosen since this render (effects run a frame
    // later: a choice made in between must not be overwritten)
    if (!ids.includes(p.value) && ids[0]) p.onChange((current) => (ids.includes(current) ? current : ids[0]!));
  }, [ids.join(), p.value]);
  return (
    <Field label="Model">
      <select name={`${p.capability}-model`} value={p.value} onChange={(e) => p.onChange((e.target as HTMLSelectElement).value)}>
        {list.map((m) => <option value={m.id}>{m.id}</option>)}
      </select>
    </Field>
  );
}

interface Msg { role: "user" | "assistant"; content: string }

function Chat(p: { api: Api; models: any[] }) {
  const [model, setModel] = useState("");
  const [messages, setMessages] = useState<Msg[]>([]);
  const [input, setInput] = useState("");
  const [cost, setCost] = useState<any>(undefined);
  const [streaming, setStreaming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const ctl = useRef<AbortController | null>(null);
  const log = useRef<HTMLDivElement>(null);
  useEffect(() => () => ctl.current?.abort(), []);
  useEffect(() => log.current?.scrollTo({ top: log.current.scrollHeight }), [messages]);
  const send = async (e: Event) => {
    e.preventDefault();
    const text = input.trim();
    if (!text || streaming) return;
    const history: Msg[] = [...messages, { role: "user", content: text }];
    setMessages([...history, { role: "assistant", content: "" }]);
    setInput("");
    setError(null);
    setCost(undefined);
    setStreaming(true);
    const abort = (ctl.current = new AbortController());
    let ref: string | null = null;
    try {
      const res = await p.api.fetch("/v1/chat/completions", {
        method: "POST",
        signal: abort.signal,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model, messages: history, stream: true, stream_options: { include_usage: true } }),
      });
      ref = res.headers.get("x-request-id");
      let answer = "";
      const parser = createParser({
        onEvent(ev) {
          if (ev.data === "[DONE]") return;
          const chunk = JSON.parse(ev.data);
          if (chunk.error) throw new Error(chunk.error.message ?? "The stream failed.");
          const delta = chunk.choices?.[0]?.delta?.content;
          if (delta) {
            answer += delta;
            setMessages([...history, { role: "assistant", content: answer }]);
          }
        },
      });
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } catch (err) {
      if ((err as Error).name !== "AbortError") setError((err as Error).message);
    } finally {
      setStreaming(false);
      ctl.current = null;
    }
    if (ref) setCost(await costOf(p.api, ref).catch(() => null));
  };
  return (
    <div class="playground-chat">
      <ModelSelect models={p.models} capability="chat" value={model} onChange={setModel} />
      <div class="chat-log" ref={log} role="log" aria-live="polite" aria-label="Conversation" tabIndex={0}>
        {messages.length === 0 && (
          // what the model is for, when it says (stories260k writes children's stories: "Ask something" would mislead)
          <div class="muted" data-testid="chat-hint">
            <p>{p.models.find((m) => m.id === model)?.description ?? "Ask something."}</p>
            <p>The answer streams in as the model writes it.</p>
          </div>
        )}
        {messages.map((m, i) => (
          <div class={`msg ${m.role}`} data-testid={m.role === "assistant" ? "assistant-message" : undefined}>
            <span class="who">{m.role === "user" ? "You" : model}</span>
            <p>{m.content || (streaming && i === messages.length - 1 ? "…" : "")}</p>
          </div>
        ))}
      </div>
      <ErrorBox error={error} />
      <Cost row={cost} />
      <form class="chat-input" onSubmit={send}>
        <textarea name="chat-input" aria-label="Message" rows={2} value={input} placeholder="Message (Enter sends, Shift+Enter for a new line)"
          onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => { if (e.key === "Enter" && !e.shiftKey) send(e); }} />
        {streaming ? <button type="button" class="secondary" onClick={() => ctl.current?.abort()}>Stop</button> : <button type="submit" disabled={!model}>Send</button>}
        <button type="button" class="secondary" disabled={streaming || !messages.length} onClick={() => { setMessages([]); setCost(undefined); }}>Clear</button>
      </form>
    </div>
  );
}

function Embeddings(p: { api: Api; models: any[] }) {
  const [model, setModel] = useState("");
  const [text, setText] = useState("How old are you?\nWhat is your age?\nThe weather is lovely today.");
  const [result, setResult] = useState<{ inputs: string[]; matrix: number[][]; dims: number } | null>(null);
  const [cost, setCost] = useState<any>(undefined);
  const run = useAction(async () => {
    const inputs = text.split("\n").map((s) => s.trim()).filter(Boolean);
    if (!inputs.length) throw new Error("Write one input per line.");
    if (inputs.length > 12) throw new Error("At most 12 inputs here (the API takes more).");
    setCost(undefined);
    const res = await p.api.fetch("/v1/embeddings", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, input: inputs }) });
    const body = await res.json();
    const vectors = body.data.sort((a: any, b: any) => a.index - b.index).map((d: any) => decodeEmbedding(d.embedding));
    setResult({ inputs, matrix: similarityMatrix(vectors), dims: vectors[0]?.length ?? 0 });
    const ref = res.headers.get("x-request-id");
    if (ref) setCost(await costOf(p.api, ref).catch(() => null));
  });
  const shade = (v: number) => `hsl(${220 - Math.max(0, v) * 180} 70% ${92 - Math.max(0, v) * 45}%)`;
  return (
    <div class="stack">
      <ModelSelect models={p.models} capability="embeddings" value={model} onChange={setModel} />
      <Field label="Inputs, one per line"><textarea name="embedding-inputs" rows={5} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} /></Field>
      <button type="button" disabled={run.pending || !model} onClick={() => run.run()}>{run.pending ? "Embedding…" : "Embed"}</button>
      <ErrorBox error={run.error} />
      {result && (
        <>
          <p class="muted small">{result.inputs.length} vectors of {result.dims} dimensions; cosine similarity:</p>
          <div class="table-wrap" role="region" aria-label="Similarity matrix" tabIndex={0}>
            <table class="matrix">
              <thead><tr><th />{result.inputs.map((_, i) => <th title={result.inputs[i]}>#{i + 1}</th>)}</tr></thead>
              <tbody>
                {result.matrix.map((row, i) => (
                  <tr>
                    <th class="label" title={result.inputs[i]}>#{i + 1} {result.inputs[i]}</th>
                    {row.map((v) => <td ref={(el) => { if (el) el.style.background = shade(v); }}>{v.toFixed(3)}</td>)}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <Cost row={cost} />
    </div>
  );
}

const SIZES = ["480x832", "832x480", "624x624"];

function Video(p: { api: Api; models: any[] }) {
  const [model, setModel] = useState("");
  const [image, setImage] = useState<{ name: string; dataUrl: string } | null>(null);
  const [prompt, setPrompt] = useState("slow zoom in");
  const [seconds, setSeconds] = useState("2");
  const [size, setSize] = useState(SIZES[0]!);
  const [job, setJob] = useState<any>(null);
  const [video, setVideo] = useState<string | null>(null);
  const [cost, setCost] = useState<any>(undefined);
  const [pollError, setPollError] = useState<string | null>(null);
  useEffect(() => () => { if (video) URL.revokeObjectURL(video); }, [video]);
  const pick = (e: Event) => {
    const file = (e.target as HTMLInputElement).files?.[0];
    if (!file) return setImage(null);
    const reader = new FileReader();
    reader.onload = () => {
      const dataUrl = String(reader.result);
      setImage({ name: file.name, dataUrl });
      // default to the photo's orientation (the size can still be changed)
      const img = new Image();
      img.onload = () => setSize(sizeFor(img.naturalWidth, img.naturalHeight));
      img.src = dataUrl;
    };
    reader.readAsDataURL(file);
  };
  const submit = useAction(async () => {
    if (!image) throw new Error("Choose an image (PNG, JPEG or WebP).");
    setVideo(null);
    setCost(undefined);
    setPollError(null);
    const j = await p.api.post("/v1/videos/generations", { model, prompt, image: image.dataUrl, seconds: Number(seconds), size });
    setJob(j);
  });
  useEffect(() => {
    if (!job || job.status === "completed" || job.status === "failed") return;
    const ctl = new AbortController();
    const id = setTimeout(async () => {
      try {
        const next = await p.api.get(`/v1/videos/generations/${encodeURIComponent(job.id)}`, ctl.signal);
        if (next.status === "completed" && next.data?.[0]?.b64_json) {
          setVideo(b64ToBlobUrl(next.data[0].b64_json));
          delete next.data;
        }
        setJob(next);
      } catch (e) {
        if (!ctl.signal.aborted) setPollError((e as Error).message);
      }
    }, 1000);
    return () => { clearTimeout(id); ctl.abort(); };
  }, [job]);
  const finished = job && (job.status === "completed" || job.status === "failed") ? job.id : null;
  useEffect(() => {
    if (!finished) return;
    const ctl = new AbortController();
    costOf(p.api, finished, ctl.signal).then((row) => !ctl.signal.aborted && setCost(row), () => !ctl.signal.aborted && setCost(null));
    return () => ctl.abort();
  }, [finished]);
  const running = job && (job.status === "queued" || job.status === "processing");
  return (
    <div class="grid-2">
      <form class="stack" onSubmit={(e) => { e.preventDefault(); submit.run(); }}>
        <ModelSelect models={p.models} capability="video" value={model} onChange={setModel} />
        <Field label="Image (PNG, JPEG or WebP)"><input type="file" name="video-image" accept="image/png,image/jpeg,image/webp" onChange={pick} /></Field>
        {image && <img class="preview" src={image.dataUrl} alt={`Selected image ${image.name}`} />}
        <Field label="Prompt"><textarea name="video-prompt" rows={2} value={prompt} maxLength={4000} onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)} /></Field>
        <div class="row">
          <Field label="Seconds"><input name="video-seconds" type="number" min={1} max={10} value={seconds} onInput={(e) => setSeconds((e.target as HTMLInputElement).value)} /></Field>
          <Field label="Size">
            <select name="video-size" value={size} onChange={(e) => setSize((e.target as HTMLSelectElement).value)}>{SIZES.map((s) => <option value={s}>{s}</option>)}</select>
          </Field>
        </div>
        <ErrorBox error={submit.error} />
        <button type="submit" disabled={submit.pending || running || !model}>{submit.pending ? "Submitting…" : "Generate video"}</button>
      </form>
      <div class="stack" aria-live="polite">
        {!job && <p class="muted">The job's status and progress appear here, then the video.</p>}
        {job && (
          <div class="job-status" data-testid="job-status">
            <Badge tone={statusTone(job.status)}>{job.status}</Badge> <span class="mono small">{job.id}</span>
            {running && <progress max={1} value={job.progress ?? undefined} aria-label="progress" />}
            {running && <Loading label={job.progress !== undefined ? `${Math.round(job.progress * 100)}%` : "waiting for the renderer…"} />}
            {job.status === "failed" && <div class="error" role="note"><strong>{job.error?.code}</strong>: {job.error?.message}</div>}
          </div>
        )}
        <ErrorBox error={pollError} />
        {video && <video class="player" src={video} controls autoplay muted loop playsInline aria-label="Generated video" />}
        <Cost row={cost} />
      </div>
    </div>
  );
}

export function Playground(p: { api: Api }) {
  const route = useRoute();
  const tab: Tab = route[1] === "embeddings" || route[1] === "video" ? route[1] : "chat";
  const models = useLoad((sig) => p.api.get("/v1/models", sig), []);
  return (
    <>
      <div class="page-head">
        <h1>Playground</h1>
        <Segmented label="Playground" value={tab} onChange={(t) => go(`playground/${t}`)} options={[["chat", "Chat"], ["embeddings", "Embeddings"], ["video", "Image to video"]]} />
      </div>
      <Card>
        {models.error && <ErrorBox error={models.error} onRetry={models.reload} />}
        {!models.data ? (models.loading ? <Loading /> : null) : tab === "chat" ? <Chat api={p.api} models={models.data.data} /> : tab === "embeddings" ? <Embeddings api={p.api} models={models.data.data} /> : <Video api={p.api} models={models.data.data} />}
      </Card>
    </>
  );
}
