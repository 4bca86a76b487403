import { useState } from "preact/hooks";
import { api, query, unwrap, type Schemas } from "../api/client";
import { navigate, useParams } from "../router";
import { useCan } from "../session";
import { Badge, CopyButton, Curl, duration, ErrorNote, Field, Loading, Page, Select, TextArea, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";
import { ProjectLayout } from "./Project";
import { dollars } from "./Usage";

// ProjectAgents: the project's agents; create one from the tool catalogue
// (with why a tool is unavailable).
export function ProjectAgents() {
  return <ProjectLayout tab="/agents">{(d) => <AgentList project={d.project.id} />}</ProjectLayout>;
}

function AgentList(props: { project: string }) {
  const id = props.project;
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/projects/{id}/agents", { params: { path: { id } } })), [id]);
  const agents = list.data?.agents ?? [];
  return (
    <>
      <section aria-labelledby="ag-h">
        <h2 id="ag-h">Agents</h2>
        <ErrorNote error={list.error} />
        {!list.data && !list.error && <Loading what="agents" />}
        {list.data && agents.length === 0 && <p class="muted">No agents yet.</p>}
        {agents.length > 0 && (
          <table>
            <caption class="visually-hidden">Agents</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">State</th>
                <th scope="col">Model</th>
                <th scope="col">Trigger</th>
                <th scope="col">Tools</th>
              </tr>
            </thead>
            <tbody>
              {agents.map((a) => (
                <tr key={a.id}>
                  <td>
                    <a href={`/agents/${a.id}`}>{a.name}</a>
                    {a.purpose && <div class="muted small">{a.purpose}</div>}
                  </td>
                  <td>
                    <Badge state={a.status} />
                  </td>
                  <td class="mono small">{a.model}</td>
                  <td>{a.trigger.label}</td>
                  <td class="small">{a.tools.join(", ")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {can("POST", "/api/projects/{id}/agents/suggested") && <Suggested project={id} onDone={list.reload} />}
      {can("POST", "/api/projects/{id}/agents") && <NewAgent project={id} />}
    </>
  );
}

const appTypes: [string, string][] = [
  ["static_site", "a static site"],
  ["blog", "a blog"],
  ["store", "a store"],
  ["saas", "a SaaS app"],
  ["api", "an API"],
  ["video", "a video site"],
];

// Suggested: the agents a kind of app usually needs, made in one go.
function Suggested(props: { project: string; onDone: () => Promise<void> }) {
  const [appType, setAppType] = useState("static_site");
  const [chosen, setChosen] = useState<string[]>([]);
  const sug = useLoad(
    () => unwrap(api.GET("/api/projects/{id}/agents/suggested", { params: { path: { id: props.project }, query: query({ appType }) } })),
    [props.project, appType],
  );
  const make = useAction(async () => {
    await unwrap(api.POST("/api/projects/{id}/agents/suggested", { params: { path: { id: props.project } }, body: { appType, keys: chosen } }));
    setChosen([]);
    await props.onDone();
  });
  return (
    <form
      class="card"
      aria-labelledby="sug-h"
      onSubmit={(e) => {
        e.preventDefault();
        make.run();
      }}
    >
      <h2 id="sug-h">Suggested agents</h2>
      <Select label="This project is" name="appType" options={appTypes} value={appType} onChange={(e) => setAppType(e.currentTarget.value)} />
      <ErrorNote error={sug.error} />
      {(sug.data?.suggestions ?? []).map((s) => (
        <label class="check" key={s.key}>
          <input
            type="checkbox"
            name="suggestion"
            value={s.key}
            checked={chosen.includes(s.key)}
            onChange={(e) => {
              const on = e.currentTarget.checked;
              setChosen((c) => (on ? [...c, s.key] : c.filter((x) => x !== s.key)));
            }}
          />
          <span>
            <strong>{s.name}</strong> <span class="small">{s.purpose}</span> <span class="muted small">({s.trigger.label})</span>
          </span>
        </label>
      ))}
      <ErrorNote error={make.error} />
      <button type="submit" class="secondary" disabled={make.busy || chosen.length === 0}>
        Create the chosen agents
      </button>
      <Curl method="POST" path={`/api/projects/${props.project}/agents/suggested`} body={{ appType, keys: chosen }} />
    </form>
  );
}

function NewAgent(props: { project: string }) {
  const tools = useLoad(() => unwrap(api.GET("/api/agents/tools", { params: { query: query({ writes: 1 }) } })), []);
  const models = useLoad(() => unwrap(api.GET("/api/ai/chat")), []);
  const [name, setName] = useState("");
  const [model, setModel] = useState("");
  const [instructions, setInstructions] = useState("");
  const [chosen, setChosen] = useState<string[]>([]);
  const [writes, setWrites] = useState(false);
  const chat = (models.data?.models ?? []).filter((m) => m.kind === "chat" && m.available && m.enabled);
  const m = model || chat[0]?.id || "";
  const body = () => ({ name, model: m, ...(instructions ? { instructions } : {}), tools: chosen, allowWrites: writes });
  const create = useAction(async () => {
    const { agent } = await unwrap(api.POST("/api/projects/{id}/agents", { params: { path: { id: props.project } }, body: body() }));
    navigate(`/agents/${agent.id}`);
  });
  const toggle = (t: string, on: boolean) => setChosen((c) => (on ? [...c, t] : c.filter((x) => x !== t)));
  return (
    <form
      class="card"
      aria-labelledby="ag-new-h"
      onSubmit={(e) => {
        e.preventDefault();
        create.run();
      }}
    >
      <h2 id="ag-new-h">Create an agent</h2>
      <div class="row">
        <Field label="Name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <Select label="Model" name="model" options={chat.map((x): [string, string] => [x.id, x.id])} value={m} onChange={(e) => setModel(e.currentTarget.value)} />
      </div>
      <TextArea label="Instructions" name="instructions" rows={3} value={instructions} onInput={(e) => setInstructions(e.currentTarget.value)} />
      <fieldset class="plain-fieldset">
        <legend>
          <strong>Tools</strong>
        </legend>
        <ErrorNote error={tools.error} />
        {(tools.data?.tools ?? []).map((t) => (
          <label class="check" key={t.name}>
            <input type="checkbox" name="tools" value={t.name} disabled={!t.available} checked={chosen.includes(t.name)} onChange={(e) => toggle(t.name, e.currentTarget.checked)} />
            <span>
              <span class="mono">{t.name}</span> <span class="small">{t.description}</span>
              {!t.available && t.reason && <span class="small muted"> — unavailable: {t.reason}</span>}
              {t.needsWrites && <span class="small muted"> — needs writes allowed</span>}
            </span>
          </label>
        ))}
      </fieldset>
      <label class="check">
        <input type="checkbox" name="allowWrites" checked={writes} onChange={(e) => setWrites(e.currentTarget.checked)} /> Allow tools that change data
      </label>
      <ErrorNote error={create.error} />
      <button type="submit" disabled={create.busy}>
        Create agent
      </button>
      <Curl method="POST" path={`/api/projects/${props.project}/agents`} body={body()} />
    </form>
  );
}

// AgentPage: an agent, run it with an input and see its steps, the run
// history, pause and resume, and its schedule.
export function AgentPage() {
  const { id } = useParams() as { id: string };
  const can = useCan();
  const a = useLoad(() => unwrap(api.GET("/api/agents/{id}", { params: { path: { id } } })), [id]);
  const d = a.data;
  const patch = useAction(async (body: Schemas["agents.PatchRequest"]) => {
    await unwrap(api.PATCH("/api/agents/{id}", { params: { path: { id } }, body }));
    await a.reload();
  });
  const sched = d?.schedule as { cron: string; input: string; next_run?: string | null } | null | undefined;
  const [cron, setCron] = useState("");
  return (
    <Page title={d ? `Agent ${d.agent.name}` : "Agent"}>
      <ErrorNote error={a.error} />
      {!d && !a.error && <Loading what="the agent" />}
      {d && (
        <>
          <p>
            <a href={`/projects/${d.agent.projectId}/agents`}>← The project's agents</a>
          </p>
          <div class="grid-2">
            <div>
              {can("POST", "/api/agents/{id}") && <RunForm id={id} onDone={a.reload} paused={d.agent.status === "paused"} />}
              <Runs runs={d.runs} />
            </div>
            <div>
              <section class="card" aria-labelledby="ag-facts-h">
                <h2 id="ag-facts-h">Settings</h2>
                <dl class="facts">
                  <dt>State</dt>
                  <dd>
                    <Badge state={d.agent.status} />
                  </dd>
                  <dt>Model</dt>
                  <dd class="mono">{d.agent.model}</dd>
                  <dt>Trigger</dt>
                  <dd>{d.agent.trigger.label}</dd>
                  <dt>Tools</dt>
                  <dd>{d.agent.tools.join(", ") || "none"}</dd>
                  <dt>Steps at most</dt>
                  <dd>{d.agent.maxSteps}</dd>
                  <dt>Events</dt>
                  <dd>{d.events.enabled ? <span class="mono small">{d.events.url}</span> : "off"}</dd>
                  <dt>Chat</dt>
                  <dd>{d.chat.enabled ? <span class="mono small">{d.chat.url}</span> : "off"}</dd>
                  <dt>Schedule</dt>
                  <dd>
                    {sched ? (
                      <>
                        <span class="mono">{sched.cron}</span>
                        {sched.next_run && (
                          <>
                            {" "}
                            next <When at={sched.next_run} />
                          </>
                        )}
                      </>
                    ) : (
                      "none"
                    )}
                  </dd>
                </dl>
                {d.agent.last_error && <p class="error small">{d.agent.last_error}</p>}
                {can("PATCH", "/api/agents/{id}") && (
                  <>
                    <div class="row">
                      {d.agent.status === "paused" ? (
                        <button type="button" onClick={() => patch.run({ action: "resume" })} disabled={patch.busy}>
                          Resume
                        </button>
                      ) : (
                        <button type="button" class="secondary" onClick={() => patch.run({ action: "pause" })} disabled={patch.busy}>
                          Pause
                        </button>
                      )}
                    </div>
                    <form
                      class="row"
                      aria-label="Schedule"
                      onSubmit={(e) => {
                        e.preventDefault();
                        patch.run({ schedule: (cron.trim() ? cron.trim() : null) as never });
                      }}
                    >
                      <Field label="Schedule (cron)" name="cron" class="mono" placeholder={sched?.cron ?? "0 9 * * *"} value={cron} onInput={(e) => setCron(e.currentTarget.value)} />
                      <button type="submit" class="secondary" disabled={patch.busy}>
                        {cron.trim() ? "Set schedule" : "Remove schedule"}
                      </button>
                    </form>
                    <ErrorNote error={patch.error} />
                    <Curl method="PATCH" path={`/api/agents/${id}`} body={{ action: d.agent.status === "paused" ? "resume" : "pause" }} />
                  </>
                )}
              </section>
              {can("PATCH", "/api/agents/{id}") && <StartModes id={id} events={d.events} chat={d.chat} onDone={a.reload} />}
            </div>
          </div>
        </>
      )}
    </Page>
  );
}

// StartModes: turn signed app events and the visitor chat on, off, or
// give them a new secret or id; change the chat's allowed origins and
// daily limit. One start mode is active at a time: the API says which to
// turn off first.
function StartModes(props: { id: string; events: Schemas["EventsView"]; chat: Schemas["ChatView"]; onDone: () => Promise<void> }) {
  const [secret, setSecret] = useState("");
  const [origins, setOrigins] = useState(props.chat.allowedOrigins.join("\n"));
  const [limit, setLimit] = useState(String(props.chat.dailyLimit || ""));
  const chatBody = () => ({ allowedOrigins: origins.split(/\s+/).filter(Boolean), ...(limit.trim() ? { dailyLimit: Number(limit) } : {}) });
  const change = useAction(async (body: Schemas["agents.PatchRequest"]) => {
    setSecret("");
    const out = await unwrap(api.PATCH("/api/agents/{id}", { params: { path: { id: props.id } }, body }));
    if (out.secret) setSecret(out.secret);
    await props.onDone();
  });
  return (
    <section class="card" aria-labelledby="ag-modes-h">
      <h2 id="ag-modes-h">Events and chat</h2>
      <h3>Signed app events</h3>
      <p class="hint">Your app sends events to the agent, signed with a secret (Service-Signature), and each one starts a run.</p>
      <div class="row">
        {props.events.enabled ? (
          <>
            <button type="button" class="secondary" disabled={change.busy} onClick={() => change.run({ events: "rotate" as never })}>
              New events secret
            </button>
            <button type="button" class="secondary" disabled={change.busy} onClick={() => change.run({ events: false as never })}>
              Turn events off
            </button>
          </>
        ) : (
          <button type="button" disabled={change.busy} onClick={() => change.run({ events: true as never })}>
            Turn events on
          </button>
        )}
      </div>
      {props.events.enabled && props.events.url && <p class="mono small break">POST {props.events.url}</p>}
      {secret && (
        <div class="secret" role="status">
          <p>The events signing secret, shown once: store it in your app now.</p>
          <p class="mono break">{secret}</p>
          <CopyButton text={secret} label="Copy secret" />
        </div>
      )}
      <h3>Visitor chat</h3>
      <form
        aria-label="Visitor chat"
        onSubmit={(e) => {
          e.preventDefault();
          change.run({ chat: chatBody() as never });
        }}
      >
        <TextArea label="Allowed origins (one a line)" name="allowedOrigins" rows={2} placeholder="https://shop.example" value={origins} onInput={(e) => setOrigins(e.currentTarget.value)} />
        <Field label="Chats a day at most" name="dailyLimit" type="number" min={1} value={limit} onInput={(e) => setLimit(e.currentTarget.value)} />
        {props.chat.enabled && props.chat.url && <p class="mono small break">Chat id {props.chat.id}: {props.chat.url}</p>}
        <div class="row">
          <button type="submit" disabled={change.busy}>
            {props.chat.enabled ? "Save chat settings" : "Turn chat on"}
          </button>
          {props.chat.enabled && (
            <>
              <button type="button" class="secondary" disabled={change.busy} onClick={() => change.run({ chat: "rotate" as never })}>
                New chat id
              </button>
              <button type="button" class="secondary" disabled={change.busy} onClick={() => change.run({ chat: false as never })}>
                Turn chat off
              </button>
            </>
          )}
        </div>
        <ErrorNote error={change.error} />
        <Curl method="PATCH" path={`/api/agents/${props.id}`} body={{ chat: chatBody() }} />
      </form>
    </section>
  );
}

function RunForm(props: { id: string; paused: boolean; onDone: () => Promise<void> }) {
  const [input, setInput] = useState("");
  const [run, setRun] = useState<Schemas["Run"]>();
  const act = useAction(async () => {
    setRun(undefined);
    const out = await unwrap(api.POST("/api/agents/{id}", { params: { path: { id: props.id } }, body: { input } }));
    setRun(out.run);
    await props.onDone();
  });
  return (
    <form
      class="card"
      aria-labelledby="run-h"
      onSubmit={(e) => {
        e.preventDefault();
        act.run();
      }}
    >
      <h2 id="run-h">Run</h2>
      <TextArea label="Input" name="input" rows={3} required value={input} onInput={(e) => setInput(e.currentTarget.value)} />
      <ErrorNote error={act.error} />
      <button type="submit" disabled={act.busy || props.paused}>
        {act.busy ? "Running…" : "Run agent"}
      </button>
      {props.paused && <p class="muted small">The agent is paused: resume it to run.</p>}
      {run && <RunView run={run} />}
      <Curl method="POST" path={`/api/agents/${props.id}`} body={{ input }} />
    </form>
  );
}

function RunView(props: { run: Schemas["Run"] }) {
  const r = props.run;
  return (
    <div aria-live="polite">
      <p>
        <Badge state={r.status} /> {r.stop_reason} · {r.tokens_used} tokens · {dollars(r.cost_micros)} · {duration(r.started_at ?? r.created_at, r.finished_at)}
      </p>
      <ol>
        {r.steps.map((s) => (
          <li key={s.step}>
            <span class="mono">{s.tool_name ?? s.kind}</span> {s.ok ? "" : <span class="error">failed</span>}
            {s.arguments && <div class="mono small muted break">{s.arguments}</div>}
            <div class="small break">{s.result.slice(0, 400)}</div>
          </li>
        ))}
      </ol>
      {r.output && <pre class="file">{r.output}</pre>}
    </div>
  );
}

function Runs(props: { runs: Schemas["Run"][] }) {
  return (
    <section aria-labelledby="runs-h">
      <h2 id="runs-h">Recent runs</h2>
      {props.runs.length === 0 ? (
        <p class="muted">No runs yet.</p>
      ) : (
        props.runs.map((r) => (
          <details class="card" key={r.id}>
            <summary>
              <Badge state={r.status} /> {r.mode} · <When at={r.created_at} /> · {r.input.slice(0, 60)}
            </summary>
            <RunView run={r} />
          </details>
        ))
      )}
    </section>
  );
}
