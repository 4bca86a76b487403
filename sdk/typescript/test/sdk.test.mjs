// The SDK against a real control plane: run by `go test ./sdk/typescript`
// (sdk_test.go), which starts one, makes a project with a database, a
// memory store, a vector index and a bucket, and gives this file a key
// limited to the project as PLATFORM_TOKEN, the way a deployment gets it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AI, Bucket, Database, Mail, MemoryStore, Platform, PlatformError, VectorIndex } from "../dist/index.js";

const env = process.env;
const ready = env.PLATFORM_API_URL && env.PLATFORM_TOKEN && env.SDK_TEST_DATABASE;
const opts = ready ? {} : { skip: "run through go test ./sdk/typescript (it starts the control plane)" };

test("databases: query with the injected key", opts, async () => {
  const db = new Database(env.SDK_TEST_DATABASE);
  await db.query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)");
  const ins = await db.query("INSERT INTO notes (body) VALUES (?), (?)", ["one", "two"]);
  assert.equal(ins.meta?.changes, 2);
  const { results } = await db.query("SELECT body FROM notes ORDER BY id");
  assert.deepEqual(results, [{ body: "one" }, { body: "two" }]);
  const b = await db.batch([{ sql: "SELECT count(*) AS n FROM notes" }, { sql: "SELECT ? AS x", params: [7] }]);
  assert.equal(b.batch?.length, 2);
});

test("refusals are PlatformError with status and code", opts, async () => {
  await assert.rejects(new Database(env.SDK_TEST_OTHER_DATABASE).query("SELECT 1"), (e) => {
    assert.ok(e instanceof PlatformError);
    assert.equal(e.status, 403);
    return true;
  });
  await assert.rejects(new Database(env.SDK_TEST_DATABASE).query("SELEC nonsense"), (e) => e instanceof PlatformError && e.status === 400);
  const bad = new Platform({ token: "not-a-key" });
  await assert.rejects(new Database(env.SDK_TEST_DATABASE, bad).query("SELECT 1"), (e) => e instanceof PlatformError && e.status === 401);
  assert.throws(() => new Platform({ apiUrl: "", token: "" , fetch }), /PLATFORM_API_URL|PLATFORM_TOKEN/);
});

test("memory stores", opts, async () => {
  const m = new MemoryStore(env.SDK_TEST_MEMORY);
  await m.set("greeting", "hello");
  await m.setJSON("user/1", { name: "Ada" }, { ttlSeconds: 3600 });
  assert.equal(await m.getText("greeting"), "hello");
  assert.deepEqual(await m.getJSON("user/1"), { name: "Ada" });
  assert.equal(await m.get("missing"), undefined);
  const page = await m.list({ prefix: "user/" });
  assert.equal(page.keys.length, 1);
  await m.delete("greeting");
  assert.equal(await m.getText("greeting"), undefined);
});

test("vectors", opts, async () => {
  const v = new VectorIndex(env.SDK_TEST_VECTORS);
  const unit = (i, w = 1) => Array.from({ length: 384 }, (_, j) => (j === i ? w : 0));
  await v.upsert([{ id: "a", values: unit(0), metadata: { kind: "x" } }, { id: "b", values: unit(1) }]);
  // Upserts are applied in the background: ask until they show.
  let got;
  for (let i = 0; i < 100; i++) {
    got = await v.query({ vector: unit(0, 0.9).map((x, j) => (j === 1 ? 0.1 : x)), topK: 1, returnMetadata: "all" });
    if (got.count > 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(got.matches[0].id, "a");
  assert.deepEqual(got.matches[0].metadata, { kind: "x" });
});

test("buckets", opts, async () => {
  const b = new Bucket(env.SDK_TEST_BUCKET);
  const o = await b.put("docs/a.txt", "file body", { contentType: "text/plain" });
  assert.equal(o.key, "docs/a.txt");
  assert.equal(new TextDecoder().decode(await b.get("docs/a.txt")), "file body");
  const page = await b.list({ prefix: "docs/" });
  assert.equal(page.objects.length, 1);
  await b.delete("docs/a.txt");
  assert.equal(await b.get("docs/a.txt"), undefined);
});

test("mail send", opts, async () => {
  const e = await new Mail().send({ to: ["someone@example.com"], subject: "Hi", text: "from the SDK" });
  assert.ok(e.id);
});

// The AI gateway is workspace-wide (a key limited to one project is
// refused with workspace_key_required): this call uses a workspace key.
test("AI chat", opts, async () => {
  const a = await new AI(new Platform({ token: env.SDK_TEST_WORKSPACE_KEY })).chat({ prompt: "Say hello", model: "gpt-4o-mini" });
  assert.equal(a.output, "Hello from the mock.");
});
