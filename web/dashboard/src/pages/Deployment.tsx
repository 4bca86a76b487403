import { useEffect, useState } from "preact/hooks";
import { api, unwrap, type Paths } from "../api/client";
import { cli } from "../api/curl";
import { useParams } from "../router";
import { useCan } from "../session";
import { Badge, Curl, duration, ErrorNote, Loading, Page, When } from "../components/ui";
import { useLoad } from "../components/load";

// How often a deployment that is still deploying is asked after: every
// second when its log is read that way, less often while the log streams.
const followEvery = 1000;
const followStreaming = 3000;

type LiveLine = { id: number; at: string; source: string; stream: string; line: string };

// Deployment: its state, commit, duration and log, followed live while it
// deploys.
export function Deployment() {
  const { id, dep } = useParams() as { id: string; dep: string };
  const d = useLoad(() => unwrap(api.GET("/api/deployments/{id}", { params: { path: { id: dep } } })), [dep]);
  const state = d.data?.deployment.state;
  const can = useCan();
  // Members who may read the project's log follow it as it is written
  // (server-sent events); others see the deployment's log as it is asked
  // after.
  // (The route is named by a cast so that this page builds against a
  // document without it: the stream's failure falls back to the poll.)
  const streams = can("GET", "/api/projects/{id}/logs" as keyof Paths) && typeof EventSource !== "undefined";
  const [live, setLive] = useState<LiveLine[]>([]);
  useEffect(() => {
    if (state !== "deploying" || !streams) return;
    const es = new EventSource(`/api/projects/${encodeURIComponent(id)}/logs?deployment=${encodeURIComponent(dep)}&follow=1`);
    es.addEventListener("line", (e) => {
      const l = JSON.parse((e as MessageEvent<string>).data) as LiveLine;
      setLive((ls) => (ls.some((x) => x.id === l.id) ? ls : [...ls, l]));
    });
    // Refused or gone: the deployment's own log, asked after, stands.
    es.onerror = () => {
      es.close();
      setLive([]);
    };
    return () => es.close();
  }, [state === "deploying", streams, id, dep]);
  useEffect(() => {
    if (state !== "deploying") return;
    const t = setTimeout(() => d.reload(), streams ? followStreaming : followEvery);
    return () => clearTimeout(t);
  }, [state, d.data]);
  const x = d.data?.deployment;
  return (
    <Page title={`Deployment ${dep}`}>
      <p>
        <a href={`/projects/${id}/deployments`}>← All deployments of this project</a>
      </p>
      <ErrorNote error={d.error} />
      {!x && !d.error && <Loading what="the deployment" />}
      {x && (
        <>
          <dl class="facts card">
            <dt>State</dt>
            <dd aria-live="polite">
              <Badge state={x.state} />
              {x.health && <span class="muted"> · health {x.health}</span>}
            </dd>
            <dt>Kind</dt>
            <dd>{x.kind}</dd>
            <dt>Source</dt>
            <dd>{x.repoName ? `${x.repoName}, commit ${x.commit}` : x.source}{x.rollback ? " (rollback)" : ""}</dd>
            <dt>Started</dt>
            <dd>
              <When at={x.createdAt} /> by {x.actor}
            </dd>
            <dt>Took</dt>
            <dd>{x.finishedAt ? duration(x.createdAt, x.finishedAt) : "still deploying"}</dd>
            <dt>Files</dt>
            <dd>{x.files}</dd>
            {x.error && (
              <>
                <dt>Error</dt>
                <dd class="error">{x.error}</dd>
              </>
            )}
          </dl>
          <section aria-labelledby="log-h">
            <h2 id="log-h">Deploy log</h2>
            {x.state === "deploying" && live.length > 0 ? (
              <pre class="log" tabIndex={0} aria-label="Deploy log, as it is written">
                {live.map((l) => `${new Date(l.at).toISOString().slice(11, 19)}  ${l.line}\n`).join("")}
              </pre>
            ) : (
              <pre class="log" tabIndex={0} aria-label="Deploy log">
                {d.data!.log.map((l) => `${new Date(l.at).toISOString().slice(11, 19)}  ${l.line}\n`).join("") || "(empty)"}
              </pre>
            )}
          </section>
          {d.data!.output.length > 0 && (
            <section aria-labelledby="out-h">
              <h2 id="out-h">Program output</h2>
              <pre class="log" tabIndex={0} aria-label="Program output">
                {d.data!.output.map((l) => `${new Date(l.at).toISOString().slice(11, 19)} ${l.stream}  ${l.line}\n`).join("")}
              </pre>
            </section>
          )}
          <Curl method="GET" path={`/api/deployments/${dep}`} />
          {streams && <Curl what="Follow the log" method="GET" path={`/api/projects/${id}/logs?deployment=${dep}&follow=1`} cli={cli("logs", "--follow", "--deployment", dep, "--project", id)} />}
        </>
      )}
    </Page>
  );
}
