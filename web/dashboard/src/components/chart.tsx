// Charts drawn as SVG by hand: bars over days (or any labels) and a
// horizontal share bar list. Each chart has a text title and a table of
// its numbers for screen readers and for copying.
import { useState } from "preact/hooks";

export type Point = { label: string; value: number };

let chartSeq = 0;

// BarChart draws one bar per point, the largest at full height.
export function BarChart(props: { title: string; points: Point[]; format?: (v: number) => string; height?: number }) {
  const [id] = useState(() => `chart${++chartSeq}`);
  const fmt = props.format ?? ((v: number) => String(Math.round(v * 100) / 100));
  const pts = props.points;
  const max = Math.max(0, ...pts.map((p) => p.value));
  const h = props.height ?? 120;
  const w = Math.max(pts.length * 14, 280);
  const bw = pts.length ? w / pts.length : w;
  const total = pts.reduce((a, p) => a + p.value, 0);
  if (max <= 0)
    return (
      <figure class="chart">
        <figcaption>{props.title}</figcaption>
        <p class="muted small">None in this period.</p>
      </figure>
    );
  return (
    <figure class="chart">
      <figcaption id={`${id}-t`}>
        {props.title} <span class="muted small">· total {fmt(total)}, peak {fmt(max)}</span>
      </figcaption>
      <svg viewBox={`0 0 ${w} ${h}`} role="img" aria-labelledby={`${id}-t`} preserveAspectRatio="none" class="bars">
        <line x1={0} y1={h} x2={w} y2={h} class="axis" />
        {pts.map((p, i) => {
          const bh = max > 0 ? Math.max(p.value > 0 ? 1 : 0, (p.value / max) * (h - 4)) : 0;
          return (
            <rect key={p.label} x={i * bw + bw * 0.15} y={h - bh} width={bw * 0.7} height={bh} class="bar">
              <title>{`${p.label}: ${fmt(p.value)}`}</title>
            </rect>
          );
        })}
      </svg>
      {pts.length > 0 && (
        <div class="ticks small muted" aria-hidden="true">
          <span>{pts[0]!.label}</span>
          <span>{pts[pts.length - 1]!.label}</span>
        </div>
      )}
      <details class="chart-data">
        <summary>The numbers</summary>
        <table>
          <caption class="visually-hidden">{props.title}</caption>
          <tbody>
            {pts.map((p) => (
              <tr key={p.label}>
                <th scope="row">{p.label}</th>
                <td>{fmt(p.value)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

// Shares lists labelled values as horizontal bars, the largest first.
export function Shares(props: { title: string; points: Point[]; format?: (v: number) => string }) {
  const fmt = props.format ?? String;
  const pts = [...props.points].sort((a, b) => b.value - a.value);
  const max = Math.max(0, ...pts.map((p) => p.value));
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      {pts.length === 0 ? (
        <p class="muted small">Nothing yet.</p>
      ) : (
        <ul class="shares">
          {pts.map((p) => (
            <li key={p.label}>
              <span class="share-label">{p.label}</span>
              <svg viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true" class="share-bar">
                <rect x={0} y={0} height={8} width={max > 0 ? (p.value / max) * 100 : 0} class="bar" />
              </svg>
              <span class="share-value">{fmt(p.value)}</span>
            </li>
          ))}
        </ul>
      )}
    </figure>
  );
}

// Meter shows used of limit as a bar with the numbers.
export function Meter(props: { label: string; used: number; limit: number; format?: (v: number) => string }) {
  const fmt = props.format ?? String;
  const pct = props.limit > 0 ? Math.min(100, (props.used / props.limit) * 100) : 0;
  return (
    <div class="meter">
      <div class="row spread">
        <span>{props.label}</span>
        <span class="small">
          {fmt(props.used)} of {props.limit > 0 ? fmt(props.limit) : "unlimited"}
        </span>
      </div>
      <svg viewBox="0 0 100 6" preserveAspectRatio="none" aria-hidden="true" class="meter-bar">
        <rect x={0} y={0} width={100} height={6} class="track" />
        <rect x={0} y={0} width={pct} height={6} class={pct >= 90 ? "bar hot" : "bar"} />
      </svg>
    </div>
  );
}
