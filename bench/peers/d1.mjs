// The databases peer of bench/peers.sh: Cloudflare's D1 as miniflare runs
// it (workerd, SQLite files under the given folder), behind a Worker that
// answers the same three operations peerbench sends the platform:
//   POST /read   {"id": N}   one row by primary key (first())
//   POST /insert {}          10 rows in one batch()
//   POST /scan   {}          1,000 rows (all())
//   POST /init   {}          the table and its 1,000 seed rows
// Usage: node d1.mjs PORT PERSIST_DIR (Node.js 22; prints "ready" once up).
import { Miniflare } from "miniflare";

const [port, persist] = process.argv.slice(2);
const script = `export default { async fetch(req, env) {
  const path = new URL(req.url).pathname;
  if (path === "/read") {
    const { id } = await req.json();
    return Response.json(await env.DB.prepare("SELECT id, v FROM kv WHERE id = ?").bind(id).first());
  }
  if (path === "/insert") {
    const st = env.DB.prepare("INSERT INTO kv (v) VALUES (?)");
    const r = await env.DB.batch(Array.from({ length: 10 }, (_, i) => st.bind("inserted " + i)));
    return Response.json({ count: r.length });
  }
  if (path === "/scan") {
    const { results } = await env.DB.prepare("SELECT id, v FROM kv ORDER BY id LIMIT 1000").all();
    return Response.json({ rows: results });
  }
  if (path === "/init") {
    await env.DB.exec("CREATE TABLE IF NOT EXISTS kv (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    const st = env.DB.prepare("INSERT INTO kv (v) VALUES (?)");
    const rows = Array.from({ length: 1000 }, (_, i) => st.bind("seed value " + i));
    await env.DB.batch(rows);
    return Response.json({ ok: true });
  }
  return new Response("not found", { status: 404 });
} }`;
const mf = new Miniflare({
  modules: true,
  script,
  d1Databases: ["DB"],
  d1Persist: persist,
  host: "127.0.0.1",
  port: Number(port),
});
await mf.ready;
console.log("ready");
const stop = async () => {
  await mf.dispose();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
