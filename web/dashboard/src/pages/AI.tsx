import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { useCan } from "../session";
import { Badge, Curl, ErrorNote, Loading, Page, Select, TextArea, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";
import { Shares } from "../components/chart";
import { dollars, num } from "./Usage";

// AI: the models with price and enable switches (admins), a playground,
// the request history and this month's spend by model and by project.
export function AI() {
  const can = useCan();
  const listing = useLoad(() => unwrap(api.GET("/api/ai/chat")), []);
  const settings = useLoad(() => unwrap(api.GET("/api/ai/settings")), []);
  const reqs = useLoad(() => unwrap(api.GET("/api/ai/requests")), []);
  const projects = useLoad(() => unwrap(api.GET("/api/projects")), []);
  const names = new Map(projects.data?.projects.map((p) => [p.id, p.name]));
  const l = listing.data;
  const month = reqs.data?.month;
  return (
    <Page title="AI">
      <ErrorNote error={listing.error} />
      {!l && !listing.error && <Loading what="models" />}
      {l && (
        <>
          {l.note && <p class="note">{l.note}</p>}
          <div class="grid-2">
            {can("POST", "/api/ai/playground") ? (
              <Playground models={l.models} onDone={reqs.reload} />
            ) : (
              <p class="note">The playground needs a developer or above.</p>
            )}
            <section class="card" aria-labelledby="spend-h">
              <h2 id="spend-h">This month{month ? ` (${month.month})` : ""}</h2>
              <ErrorNote error={reqs.error} />
              {month && (
                <>
                  <dl class="stats">
                    <div>
                      <dt>Requests</dt>
                      <dd>{num(month.requests)}</dd>
                    </div>
                    <div>
                      <dt>Spend</dt>
                      <dd>{dollars(month.costMicros)}</dd>
                    </div>
                  </dl>
                  <Shares title="Spend by model" format={dollars} points={month.byModel.map((s) => ({ label: s.model ?? "?", value: s.costMicros }))} />
                  <Shares title="Spend by project" format={dollars} points={month.byProject.map((s) => ({ label: s.projectId ? (names.get(s.projectId) ?? s.projectId) : "no project", value: s.costMicros }))} />
                </>
              )}
            </section>
          </div>
          <Models l={l} s={settings.data} may={can("PUT", "/api/ai/settings")} onDone={settings.reload} />
          <Requests r={reqs.data} />
        </>
      )}
    </Page>
  );
}

function Models(props: { l: Schemas["ChatListing"]; s?: Schemas["SettingsView"]; may: boolean; onDone: () => Promise<void> }) {
  const set = useAction(async (body: Schemas["SettingsRequest"]) => {
    await unwrap(api.PUT("/api/ai/settings", { body }));
    await props.onDone();
  });
  const on = new Map(props.s?.models.map((m) => [m.id, m.enabled]));
  return (
    <section aria-labelledby="models-h">
      <div class="row spread">
        <h2 id="models-h">Models</h2>
        {props.may && props.s && (
          <label class="check">
            <input type="checkbox" name="gateway" checked={props.s.enabled} onChange={(e) => set.run({ enabled: e.currentTarget.checked })} /> AI gateway on
          </label>
        )}
      </div>
      <ErrorNote error={set.error} />
      <table>
        <caption class="visually-hidden">Models with their prices per million tokens</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Kind</th>
            <th scope="col">Input / M tokens</th>
            <th scope="col">Output / M tokens</th>
            <th scope="col">Enabled</th>
          </tr>
        </thead>
        <tbody>
          {props.l.models.map((m) => (
            <tr key={m.id}>
              <td>
                <span class="mono">{m.id}</span> <span class="muted small">{m.provider}</span>
                {!m.available && m.reason && <div class="muted small">{m.reason}</div>}
              </td>
              <td>{m.kind}</td>
              <td>{dollars(m.price.inputMicrosPerMTok)}</td>
              <td>{dollars(m.price.outputMicrosPerMTok)}</td>
              <td>
                {props.may ? (
                  <label class="check">
                    <input type="checkbox" checked={on.get(m.id) ?? m.enabled} onChange={(e) => set.run({ models: { [m.id]: e.currentTarget.checked } })} />
                    <span class="visually-hidden">Enable {m.id}</span>
                  </label>
                ) : (
                  <Badge state={m.enabled ? "enabled" : "disabled"} />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

type Done = { modelUsed: string; tokensIn: number; tokensOut: number; costMicros: number; latencyMs: number };

// readEvents reads a server-sent event stream, calling on for each event.
async function readEvents(body: ReadableStream<Uint8Array>, on: (event: string, data: unknown) => void) {
  const reader = body.getReader();
  const text = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += text.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let event = "message";
      let data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      on(event, data ? JSON.parse(data) : null);
    }
  }
}

// Playground: a prompt to a model, the answer streamed as it is written.
function Playground(props: { models: Schemas["ModelView"][]; onDone: () => Promise<void> }) {
  const chat = props.models.filter((m) => m.kind === "chat" && m.available && m.enabled);
  const [model, setModel] = useState("");
  const [prompt, setPrompt] = useState("");
  const [output, setOutput] = useState("");
  const [done, setDone] = useState<Done>();
  const m = model || chat[0]?.id || "";
  const body = { model: m, messages: [{ role: "user", content: prompt }], stream: true };
  const run = useAction(async () => {
    setOutput("");
    setDone(undefined);
    const res = await api.POST("/api/ai/chat", { body, parseAs: "stream" });
    // A refusal before the stream starts is an ordinary error answer.
    await unwrap(Promise.resolve(res));
    if (!res.data) throw new Error("the answer had no body");
    let failed = "";
    await readEvents(res.data as ReadableStream<Uint8Array>, (event, data) => {
      const d = data as Record<string, unknown>;
      if (event === "delta") setOutput((o) => o + String(d["text"] ?? ""));
      else if (event === "done") setDone(d as unknown as Done);
      else if (event === "error") failed = String(d["message"] ?? "the stream failed");
    });
    await props.onDone();
    if (failed) throw new Error(failed);
  });
  if (chat.length === 0)
    return (
      <section class="card" aria-labelledby="pg-h">
        <h2 id="pg-h">Playground</h2>
        <p class="muted">No chat model can be used now: each model above says why.</p>
      </section>
    );
  return (
    <form
      class="card"
      aria-labelledby="pg-h"
      onSubmit={(e) => {
        e.preventDefault();
        run.run();
      }}
    >
      <h2 id="pg-h">Playground</h2>
      <Select label="Model" name="model" options={chat.map((x): [string, string] => [x.id, x.id])} value={m} onChange={(e) => setModel(e.currentTarget.value)} />
      <TextArea label="Prompt" name="prompt" rows={3} required value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
      <ErrorNote error={run.error} />
      <button type="submit" disabled={run.busy}>
        {run.busy ? "Answering…" : "Ask"}
      </button>
      {(output || done) && (
        <div aria-live="polite">
          <pre class="file">{output}</pre>
          {done && (
            <p class="muted small">
              {done.modelUsed} · {done.tokensIn} in, {done.tokensOut} out · {dollars(done.costMicros)} · {done.latencyMs} ms
            </p>
          )}
        </div>
      )}
      <Curl method="POST" path="/api/ai/chat" body={body} />
    </form>
  );
}

function Requests(props: { r?: Schemas["RequestsPage"] }) {
  const rows = props.r?.requests ?? [];
  return (
    <section aria-labelledby="req-h">
      <h2 id="req-h">Recent requests</h2>
      <p class="muted small">Kept {props.r?.keptDays ?? 30} days; prompts and answers are never kept.</p>
      {rows.length === 0 ? (
        <p class="muted">No requests yet.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Recent AI requests</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Model</th>
              <th scope="col">State</th>
              <th scope="col">Tokens</th>
              <th scope="col">Cost</th>
            </tr>
          </thead>
          <tbody>
            {rows.slice(0, 50).map((r) => (
              <tr key={r.id}>
                <td>
                  <When at={r.at} />
                </td>
                <td class="mono small">
                  {r.modelUsed ?? r.model} <span class="muted">{r.surface}</span>
                </td>
                <td>
                  <Badge state={r.status} />
                  {r.errorCode && <div class="small">{r.errorCode}</div>}
                </td>
                <td>
                  {r.tokensIn} / {r.tokensOut}
                </td>
                <td>{dollars(r.costMicros)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
