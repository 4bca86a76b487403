import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { cli } from "../api/curl";
import { useParams } from "../router";
import { useCan } from "../session";
import { Badge, bytes, Curl, ErrorNote, Loading, Page, TextArea } from "../components/ui";
import { useAction, useLoad } from "../components/load";

// Databases: every project with its databases, to open one or create one.
export function Databases() {
  const all = useLoad(async () => {
    const { projects } = await unwrap(api.GET("/api/projects"));
    return Promise.all(
      projects.map(async (p) => ({
        project: p,
        list: await unwrap(api.GET("/api/projects/{id}/databases", { params: { path: { id: p.id }, query: { limit: 200 } as never } })),
      })),
    );
  }, []);
  return (
    <Page title="Databases">
      <ErrorNote error={all.error} />
      {!all.data && !all.error && <Loading what="databases" />}
      {all.data && all.data.length === 0 && <p class="muted">Create a project first.</p>}
      {all.data?.map(({ project, list }) => (
        <section key={project.id} aria-labelledby={`dbs-${project.id}`}>
          <h2 id={`dbs-${project.id}`}>
            <a href={`/projects/${project.id}/databases`}>{project.name}</a>
          </h2>
          {list.databases.length === 0 ? (
            <p class="muted">No databases.</p>
          ) : (
            <table>
              <caption class="visually-hidden">Databases of {project.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">State</th>
                  <th scope="col">Size</th>
                </tr>
              </thead>
              <tbody>
                {list.databases.map((d) => (
                  <tr key={d.id}>
                    <td>
                      <a href={`/databases/${d.id}`}>{d.name}</a>
                    </td>
                    <td>
                      <Badge state={d.status} />
                    </td>
                    <td>{bytes(d.sizeBytes)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {list.nextCursor && (
            <p>
              <a href={`/projects/${project.id}/databases`}>More of {project.name}'s databases</a>
            </p>
          )}
        </section>
      ))}
    </Page>
  );
}

type QueryAnswer = Schemas["QueryAnswerSchema"];

// DatabaseConsole: the database, its limits, and SQL with parameters run
// as one transaction, the rows as a table with the answer's meta.
export function DatabaseConsole() {
  const { id } = useParams() as { id: string };
  const can = useCan();
  const db = useLoad(() => unwrap(api.GET("/api/databases/{id}", { params: { path: { id } } })), [id]);
  const [sql, setSql] = useState("SELECT name FROM sqlite_schema WHERE type = 'table'");
  const [params, setParams] = useState("");
  const [answer, setAnswer] = useState<QueryAnswer>();
  const [badParams, setBadParams] = useState("");
  const parsed = (): unknown[] | undefined => {
    if (!params.trim()) return undefined;
    const v = JSON.parse(params);
    if (!Array.isArray(v)) throw new Error("not an array");
    return v;
  };
  const run = useAction(async () => {
    let p: unknown[] | undefined;
    try {
      p = parsed();
      setBadParams("");
    } catch {
      setBadParams('Parameters must be a JSON array, like ["hi", 2].');
      return;
    }
    setAnswer(undefined);
    const a = await unwrap(api.POST("/api/databases/{id}", { params: { path: { id } }, body: { sql, ...(p ? { params: p } : {}) } }));
    setAnswer(a);
  });
  let curlParams: unknown[] | undefined;
  try {
    curlParams = parsed();
  } catch {
    curlParams = undefined;
  }
  const d = db.data?.database;
  return (
    <Page title={d ? `Database ${d.name}` : "Database"}>
      <ErrorNote error={db.error} />
      {!d && !db.error && <Loading what="the database" />}
      {d && (
        <>
          <p>
            <a href={`/projects/${d.projectId}/databases`}>← The project's databases</a>
          </p>
          <dl class="facts card">
            <dt>Id</dt>
            <dd class="mono">{d.id}</dd>
            <dt>Status</dt>
            <dd>
              <Badge state={d.status} />
              {d.error && <span class="error"> {d.error}</span>}
            </dd>
            <dt>Size</dt>
            <dd>{bytes(d.sizeBytes)}</dd>
            <dt>Endpoint</dt>
            <dd class="mono">{d.endpoint}</dd>
          </dl>
          {can("POST", "/api/databases/{id}") ? (
            <form
              class="card"
              aria-labelledby="sql-h"
              onSubmit={(e) => {
                e.preventDefault();
                run.run();
              }}
            >
              <h2 id="sql-h">Run SQL</h2>
              <TextArea label="SQL" name="sql" rows={5} class="mono" value={sql} onInput={(e) => setSql(e.currentTarget.value)} hint="Several statements separated by ; run as one transaction." />
              <TextArea label="Parameters (JSON array, optional)" name="params" rows={2} class="mono" value={params} onInput={(e) => setParams(e.currentTarget.value)} hint='Bound to ? in order, e.g. ["hi", 2]; a blob is {"$blob": "<base64>"}.' />
              {badParams && (
                <p class="error" role="alert">
                  {badParams}
                </p>
              )}
              <ErrorNote error={run.error} />
              <button type="submit" disabled={run.busy}>
                {run.busy ? "Running…" : "Run"}
              </button>
              <Curl method="POST" path={`/api/databases/${id}`} body={{ sql, ...(curlParams ? { params: curlParams } : {}) }} cli={cli("db", "query", sql || "SELECT 1", ...(curlParams ?? []).map((v) => (typeof v === "string" ? v : JSON.stringify(v))), "--db", id, "--project", d.projectId)} />
            </form>
          ) : (
            <p class="note">Running SQL needs a developer or above (queries need full access, even SELECT).</p>
          )}
          {answer && <Results a={answer} />}
          {can("POST", "/api/databases/{id}/export") && <Export id={id} />}
        </>
      )}
    </Page>
  );
}

// Export: start an export, follow it every second, then download the .sql
// file.
function Export(props: { id: string }) {
  const [state, setState] = useState<Schemas["ExportAnswer"]>();
  const act = useAction(async () => {
    setState(undefined);
    const path = { id: props.id };
    let a = await unwrap(api.POST("/api/databases/{id}/export", { params: { path }, body: {} }));
    setState(a);
    while (a.status === "active") {
      await new Promise((r) => setTimeout(r, 1000));
      a = await unwrap(api.POST("/api/databases/{id}/export", { params: { path }, body: { bookmark: a.bookmark } }));
      setState(a);
    }
  });
  return (
    <section class="card" aria-labelledby="exp-h">
      <h2 id="exp-h">Export</h2>
      <p class="muted small">A complete .sql file of the database, made from a snapshot while queries go on.</p>
      <button type="button" class="secondary" onClick={() => act.run()} disabled={act.busy}>
        {act.busy ? "Exporting…" : "Export"}
      </button>
      <ErrorNote error={act.error} />
      {state && (
        <div role="status" class="small">
          {state.status === "active" && (
            <p>
              <progress aria-label="Export under way" /> Exporting…
            </p>
          )}
          {state.status === "complete" && (
            <p>
              Ready ({bytes(state.sizeBytes ?? 0)}):{" "}
              <a href={state.download ?? `/api/databases/${props.id}/export?bookmark=${encodeURIComponent(state.bookmark)}`} download>
                Download the .sql file
              </a>
            </p>
          )}
          {state.status === "failed" && <p class="error">The export failed: {state.error}</p>}
        </div>
      )}
      <Curl method="POST" path={`/api/databases/${props.id}/export`} body={{}} />
    </section>
  );
}

function Results(props: { a: QueryAnswer }) {
  const rows = props.a.results ?? [];
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const m = props.a.meta;
  return (
    <section aria-labelledby="res-h" aria-live="polite">
      <h2 id="res-h">Results</h2>
      {m && (
        <p class="muted small">
          {props.a.statements ?? 1} statement(s) · {m.rows_read} rows read · {m.rows_written} written · {m.changes} changed · {m.duration.toFixed(2)} ms · size{" "}
          {bytes(m.size_after)}
        </p>
      )}
      {rows.length === 0 ? (
        <p class="muted">No rows.</p>
      ) : (
        <div class="scroll" tabIndex={0} role="region" aria-label="Result rows">
          <table>
            <caption class="visually-hidden">Rows of the last statement</caption>
            <thead>
              <tr>
                {cols.map((c) => (
                  <th scope="col" key={c}>
                    {c}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((r, i) => (
                <tr key={i}>
                  {cols.map((c) => (
                    <td key={c} class="mono">
                      {show(r[c])}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function show(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}
