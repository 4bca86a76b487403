// lazyPage loads a page's module when it is first opened, so that the
// script every page loads stays small; the module is kept afterwards.
import type { FunctionComponent } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Loading } from "./ui";

export function lazyPage(load: () => Promise<FunctionComponent>): FunctionComponent {
  let loaded: FunctionComponent | undefined;
  let pending: Promise<FunctionComponent> | undefined;
  return function LazyPage() {
    const [P, setP] = useState<FunctionComponent | undefined>(() => loaded);
    const [error, setError] = useState("");
    useEffect(() => {
      if (loaded) return;
      pending ??= load();
      pending.then(
        (c) => {
          loaded = c;
          setP(() => c);
        },
        (e: unknown) => {
          pending = undefined;
          setError(`This page did not load (${String(e)}): reload to try again.`);
        },
      );
    }, []);
    if (error)
      return (
        <p class="error" role="alert">
          {error}
        </p>
      );
    return P ? <P /> : <Loading what="the page" />;
  };
}
