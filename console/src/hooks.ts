import { useCallback, useEffect, useRef, useState } from "preact/hooks";

export interface Loaded<T> {
  data: T | null;
  error: Error | null;
  loading: boolean;
  reload(): void;
}

/** Run `load` when `deps` change (aborting the previous run); loading and error states included. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], opts: { refreshMs?: number } = {}): Loaded<T> {
  const [state, setState] = useState<{ data: T | null; error: Error | null; loading: boolean }>({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, error: null, loading: false }),
      (error) => !ctl.signal.aborted && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => ctl.abort();
  }, [...deps, tick]);
  useEffect(() => {
    if (!opts.refreshMs) return;
    const id = setInterval(reload, opts.refreshMs);
    return () => clearInterval(id);
  }, [opts.refreshMs]);
  return { ...state, reload };
}

/** An async action's pending/error state for forms and buttons. */
export function useAction<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const alive = useRef(true);
  useEffect(() => () => void (alive.current = false), []);
  const run = async (...args: A) => {
    setPending(true);
    setError(null);
    try {
      await fn(...args);
    } catch (e) {
      if (alive.current) setError((e as Error).message);
    } finally {
      if (alive.current) setPending(false);
    }
  };
  return { run, pending, error, setError };
}
