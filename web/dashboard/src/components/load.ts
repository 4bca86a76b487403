import { useCallback, useEffect, useRef, useState } from "preact/hooks";

export type Loaded<T> = {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => Promise<void>;
};

// useLoad runs fn when deps change and keeps its answer; reload runs it
// again (after a change), keeping the old answer on screen meanwhile.
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const run = useCallback(async () => {
    const mine = ++seq.current;
    setLoading(true);
    try {
      const d = await fn();
      if (mine === seq.current) {
        setData(d);
        setError(undefined);
      }
    } catch (e) {
      if (mine === seq.current) setError(e);
    } finally {
      if (mine === seq.current) setLoading(false);
    }
  }, deps);
  useEffect(() => {
    run();
  }, [run]);
  return { data, error, loading, reload: run };
}

// useEvery calls fn every ms while active and the tab is visible (a hidden
// tab asks nothing; it catches up as soon as it is shown again).
export function useEvery(fn: () => unknown, ms: number, active = true) {
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => {
    if (!active) return;
    const tick = () => {
      if (document.visibilityState === "visible") latest.current();
    };
    const t = setInterval(tick, ms);
    const shown = () => document.visibilityState === "visible" && latest.current();
    document.addEventListener("visibilitychange", shown);
    return () => {
      clearInterval(t);
      document.removeEventListener("visibilitychange", shown);
    };
  }, [ms, active]);
}

// useAction wraps a form's submit: busy while it runs, the error if it
// failed.
export function useAction<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async (...args: A) => {
    setBusy(true);
    setError(undefined);
    try {
      await fn(...args);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, setError };
}
