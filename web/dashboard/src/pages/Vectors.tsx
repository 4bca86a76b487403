import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { navigate, useParams } from "../router";
import { useCan } from "../session";
import { Curl, ErrorNote, Field, Loading, Page, Select, TextArea, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";
import { ProjectLayout } from "./Project";

// ProjectVectors: the project's collections with their counts; create one.
export function ProjectVectors() {
  return <ProjectLayout tab="/vectors">{(d) => <NewCollection project={d.project.id} />}</ProjectLayout>;
}

function NewCollection(props: { project: string }) {
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/projects/{id}/vectors", { params: { path: { id: props.project } } })), [props.project]);
  const [name, setName] = useState("");
  const [dims, setDims] = useState("384");
  const [metric, setMetric] = useState("cosine");
  const body = () => ({ name, dimensions: Number(dims), metric });
  const create = useAction(async () => {
    const { collection } = await unwrap(api.POST("/api/projects/{id}/vectors", { params: { path: { id: props.project } }, body: body() }));
    navigate(`/vectors/${collection.id}`);
  });
  return (
    <section aria-labelledby="vec-h">
      <h2 id="vec-h">Vector collections</h2>
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="collections" />}
      {list.data && list.data.collections.length === 0 && <p class="muted">No collections yet.</p>}
      {list.data && list.data.collections.length > 0 && (
        <table>
          <caption class="visually-hidden">The project's vector collections</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Vectors</th>
              <th scope="col">Dimensions</th>
              <th scope="col">Metric</th>
              <th scope="col">Filterable fields</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.data.collections.map((c) => (
              <tr key={c.id}>
                <td>
                  <a href={`/vectors/${c.id}`}>{c.name}</a>
                </td>
                <td>{c.vectorCount.toLocaleString()}</td>
                <td>{c.dimensions}</td>
                <td>{c.metric}</td>
                <td>{c.metadataIndexes.map((m) => m.propertyName).join(", ") || "none"}</td>
                <td>
                  <When at={c.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Curl method="GET" path={`/api/projects/${props.project}/vectors`} what="List the collections" />
      {can("POST", "/api/projects/{id}/vectors") && (
        <form
          class="card narrow"
          aria-labelledby="vec-new-h"
          onSubmit={(e) => {
            e.preventDefault();
            create.run();
          }}
        >
          <h3 id="vec-new-h">Create a collection</h3>
          <Field label="Name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <Select label="Dimensions" name="dimensions" options={[["384", "384 (bge-small)"], ["768", "768 (bge-base)"], ["1024", "1024 (bge-large)"], ["1536", "1536"]]} value={dims} onChange={(e) => setDims(e.currentTarget.value)} />
          <p class="hint">Text is embedded with the bge model of the same size, so queries by text work.</p>
          <Select label="Metric" name="metric" options={[["cosine", "cosine"], ["euclidean", "euclidean"], ["dot-product", "dot product"]]} value={metric} onChange={(e) => setMetric(e.currentTarget.value)} />
          <ErrorNote error={create.error} />
          <button type="submit" disabled={create.busy}>
            Create collection
          </button>
          <Curl method="POST" path={`/api/projects/${props.project}/vectors`} body={body()} />
        </form>
      )}
    </section>
  );
}

// VectorCollection: counts, metadata indexes, and a query by text or
// vector with a filter.
export function VectorCollection() {
  const { id } = useParams() as { id: string };
  const can = useCan();
  const c = useLoad(() => unwrap(api.GET("/api/vectors/{id}", { params: { path: { id } } })), [id]);
  const col = c.data?.collection;
  return (
    <Page title={col ? `Collection ${col.name}` : "Collection"}>
      <ErrorNote error={c.error} />
      {!col && !c.error && <Loading what="the collection" />}
      {col && (
        <>
          <p>
            <a href={`/projects/${col.projectId}/vectors`}>← The project's collections</a>
          </p>
          <div class="grid-2">
            <Query id={id} />
            <div>
              <dl class="facts card">
                <dt>Id</dt>
                <dd class="mono">{col.id}</dd>
                <dt>Vectors</dt>
                <dd>{c.data?.vectorCount ?? col.vectorCount}</dd>
                <dt>Dimensions</dt>
                <dd>{col.dimensions}</dd>
                <dt>Metric</dt>
                <dd>{col.metric}</dd>
                <dt>Made</dt>
                <dd>
                  <When at={col.createdAt} />
                </dd>
              </dl>
              <Indexes col={col} may={can("POST", "/api/vectors/{id}")} onDone={c.reload} />
              {can("POST", "/api/vectors/{id}/upsert") && <Upsert id={id} onDone={c.reload} />}
            </div>
          </div>
        </>
      )}
    </Page>
  );
}

function Query(props: { id: string }) {
  const [text, setText] = useState("");
  const [vector, setVector] = useState("");
  const [filter, setFilter] = useState("");
  const [topK, setTopK] = useState("5");
  const [answer, setAnswer] = useState<Schemas["QueryAnswer"]>();
  const body = (): Schemas["vectors.QuerySchema"] => {
    const b: Schemas["vectors.QuerySchema"] = { topK: Number(topK), returnMetadata: "all" };
    if (vector.trim()) b.vector = JSON.parse(vector) as number[];
    else b.text = text;
    if (filter.trim()) b.filter = JSON.parse(filter) as Record<string, never>;
    return b;
  };
  const run = useAction(async () => {
    let b;
    try {
      b = body();
    } catch {
      throw new Error("the vector is a JSON array of numbers and the filter a JSON object");
    }
    setAnswer(await unwrap(api.POST("/api/vectors/{id}/query", { params: { path: { id: props.id } }, body: b })));
  });
  let curlBody: unknown;
  try {
    curlBody = body();
  } catch {
    curlBody = undefined;
  }
  return (
    <section>
      <form
        class="card"
        aria-labelledby="q-h"
        onSubmit={(e) => {
          e.preventDefault();
          run.run();
        }}
      >
        <h2 id="q-h">Query</h2>
        <Field label="Text" name="text" value={text} onInput={(e) => setText(e.currentTarget.value)} hint="Embedded on the server; or give a vector below." />
        <TextArea label="Vector (JSON array, optional)" name="vector" rows={2} class="mono" value={vector} onInput={(e) => setVector(e.currentTarget.value)} />
        <TextArea label="Filter (JSON, optional)" name="filter" rows={2} class="mono" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} hint='e.g. {"genre": {"$eq": "docs"}} on an indexed field.' />
        <Field label="Matches" name="topK" type="number" min={1} max={100} value={topK} onInput={(e) => setTopK(e.currentTarget.value)} />
        <ErrorNote error={run.error} />
        <button type="submit" disabled={run.busy}>
          Query
        </button>
        <Curl method="POST" path={`/api/vectors/${props.id}/query`} body={curlBody} />
      </form>
      {answer && (
        <table aria-live="polite">
          <caption>{answer.count} matches</caption>
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Score</th>
              <th scope="col">Metadata</th>
            </tr>
          </thead>
          <tbody>
            {answer.matches.map((m) => (
              <tr key={m.id}>
                <td class="mono">{m.id}</td>
                <td>{m.score.toFixed(4)}</td>
                <td class="mono small">{m.metadata ? JSON.stringify(m.metadata) : ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Indexes(props: { col: Schemas["Collection"]; may: boolean; onDone: () => Promise<void> }) {
  const [prop, setProp] = useState("");
  const [type, setType] = useState("string");
  const add = useAction(async () => {
    await unwrap(api.POST("/api/vectors/{id}", { params: { path: { id: props.col.id } }, body: { action: "index-metadata", propertyName: prop, indexType: type } }));
    setProp("");
    await props.onDone();
  });
  return (
    <section class="card" aria-labelledby="idx-h">
      <h2 id="idx-h">Metadata indexes</h2>
      {props.col.metadataIndexes.length === 0 ? (
        <p class="muted">None: filters need an indexed field.</p>
      ) : (
        <ul>
          {props.col.metadataIndexes.map((i) => (
            <li key={i.propertyName}>
              <span class="mono">{i.propertyName}</span> ({i.indexType})
            </li>
          ))}
        </ul>
      )}
      {props.may && (
        <form
          class="row"
          aria-label="Index a metadata field"
          onSubmit={(e) => {
            e.preventDefault();
            add.run();
          }}
        >
          <Field label="Field" name="propertyName" required value={prop} onInput={(e) => setProp(e.currentTarget.value)} />
          <Select label="Type" name="indexType" options={[["string", "string"], ["number", "number"], ["boolean", "boolean"]]} value={type} onChange={(e) => setType(e.currentTarget.value)} />
          <button type="submit" class="secondary" disabled={add.busy}>
            Add index
          </button>
        </form>
      )}
      <ErrorNote error={add.error} />
    </section>
  );
}

function Upsert(props: { id: string; onDone: () => Promise<void> }) {
  const [vid, setVid] = useState("");
  const [text, setText] = useState("");
  const [meta, setMeta] = useState("");
  const up = useAction(async () => {
    let metadata: Record<string, never> | undefined;
    if (meta.trim()) {
      try {
        metadata = JSON.parse(meta) as Record<string, never>;
      } catch {
        throw new Error("metadata is a JSON object");
      }
    }
    await unwrap(api.POST("/api/vectors/{id}/upsert", { params: { path: { id: props.id } }, body: { vectors: [{ id: vid, text, ...(metadata ? { metadata } : {}) }] } }));
    setVid("");
    setText("");
    await props.onDone();
  });
  return (
    <form
      class="card"
      aria-labelledby="ups-h"
      onSubmit={(e) => {
        e.preventDefault();
        up.run();
      }}
    >
      <h2 id="ups-h">Add a text</h2>
      <Field label="Vector id" name="vectorId" required value={vid} onInput={(e) => setVid(e.currentTarget.value)} />
      <TextArea label="Text" name="vectorText" rows={2} required value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <TextArea label="Metadata (JSON, optional)" name="metadata" rows={2} class="mono" value={meta} onInput={(e) => setMeta(e.currentTarget.value)} />
      <ErrorNote error={up.error} />
      <button type="submit" class="secondary" disabled={up.busy}>
        Add
      </button>
    </form>
  );
}
