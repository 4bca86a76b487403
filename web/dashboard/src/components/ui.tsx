// Small building blocks every page uses.
import type { ComponentChildren, InputHTMLAttributes, SelectHTMLAttributes, TextareaHTMLAttributes } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { curl, type CurlOptions } from "../api/curl";
import { message } from "../api/client";

// Page titles the document, and moves focus to its heading when it opens
// so that screen readers announce the new page.
export function Page(props: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const h1 = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${props.title} · Dashboard`;
    h1.current?.focus({ preventScroll: true });
  }, [props.title]);
  return (
    <>
      <div class="page-head">
        <h1 ref={h1} tabIndex={-1}>
          {props.title}
        </h1>
        {props.actions}
      </div>
      {props.children}
    </>
  );
}

export function ErrorNote(props: { error: unknown }) {
  if (!props.error) return null;
  return (
    <p class="error" role="alert">
      {message(props.error)}
    </p>
  );
}

export function Loading(props: { what?: string }) {
  return (
    <p class="muted" role="status">
      Loading{props.what ? ` ${props.what}` : ""}…
    </p>
  );
}

// CopyButton copies text and says so.
export function CopyButton(props: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.text);
      setDone(true);
      setTimeout(() => setDone(false), 2000);
    } catch {
      setDone(false);
    }
  };
  return (
    <button type="button" class="secondary small" onClick={copy} aria-live="polite">
      {done ? "Copied" : (props.label ?? "Copy")}
    </button>
  );
}

// Curl shows the call a form makes as a curl command, copyable, and, where
// the command line has one, the same action as a `platform` command.
export function Curl(props: { method: string; path: string; body?: unknown; what?: string; cli?: string } & CurlOptions) {
  const text = curl(props.method, props.path, props.body, props);
  const label = props.cli ? "the API call (curl) and the CLI command" : "the API call (curl)";
  return (
    <details class="curl">
      <summary>{props.what ? `${props.what}: ${label}` : `Show ${label}`}</summary>
      <pre>
        <code>{text}</code>
      </pre>
      <CopyButton text={text} label="Copy command" />
      {!props.public && <p class="muted small">$KEY is an API key: create one on the Keys page.</p>}
      {props.cli && (
        <>
          <pre class="cli">
            <code>{props.cli}</code>
          </pre>
          <CopyButton text={props.cli} label="Copy CLI command" />
          <p class="muted small">The platform command line, after platform login (platform login --device signs it in from this browser).</p>
        </>
      )}
    </details>
  );
}

let fieldSeq = 0;

type InputProps = InputHTMLAttributes<HTMLInputElement> & { label: string; hint?: string };

// Field is a labelled input.
export function Field({ label, hint, ...input }: InputProps) {
  const [id] = useState(() => `f${++fieldSeq}`);
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} aria-describedby={hint ? `${id}-hint` : undefined} {...input} />
      {hint && (
        <p id={`${id}-hint`} class="hint">
          {hint}
        </p>
      )}
    </div>
  );
}

type AreaProps = TextareaHTMLAttributes<HTMLTextAreaElement> & { label: string; hint?: string };

export function TextArea({ label, hint, ...area }: AreaProps) {
  const [id] = useState(() => `f${++fieldSeq}`);
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <textarea id={id} aria-describedby={hint ? `${id}-hint` : undefined} {...area} />
      {hint && (
        <p id={`${id}-hint`} class="hint">
          {hint}
        </p>
      )}
    </div>
  );
}

type SelectProps = SelectHTMLAttributes<HTMLSelectElement> & { label: string; options: [string, string][] };

export function Select({ label, options, ...sel }: SelectProps) {
  const [id] = useState(() => `f${++fieldSeq}`);
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} {...sel}>
        {options.map(([v, text]) => (
          <option value={v} key={v}>
            {text}
          </option>
        ))}
      </select>
    </div>
  );
}

// Badge shows a state word with a colour class of its own.
export function Badge(props: { state: string }) {
  return <span class={`badge badge-${props.state.replace(/[^a-z_]/g, "")}`}>{props.state.replace(/_/g, " ")}</span>;
}

export function When(props: { at?: string | null }) {
  if (!props.at) return <span class="muted">never</span>;
  const d = new Date(props.at);
  return (
    <time dateTime={props.at} title={d.toISOString()}>
      {ago(d)}
    </time>
  );
}

export function ago(d: Date): string {
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  // Within a minute either way is now: the server's and this machine's
  // clocks may differ a little.
  if (s < 60 && s > -60) return s < 5 ? "just now" : `${s} s ago`;
  if (s < 0) return `in ${span(-s)}`;
  return `${span(s)} ago`;
}

function span(s: number): string {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function duration(from?: string, to?: string | null): string {
  if (!from || !to) return "";
  const ms = new Date(to).getTime() - new Date(from).getTime();
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = n;
  let i = -1;
  do {
    v /= 1024;
    i++;
  } while (v >= 1024 && i < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}
