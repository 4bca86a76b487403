// The functions peer of bench/peers.sh: the platform's hello-world
// function (runtime/testdata/fn, GET /hello) as a Worker in workerd, which
// miniflare runs. Usage: node fn.mjs PORT (Node.js 22; prints "ready" once
// the Worker answers).
import { Miniflare } from "miniflare";

const [port] = process.argv.slice(2);
const script = `export default { async fetch(req) {
  const path = new URL(req.url).pathname;
  if (path === "/hello") return new Response("hello from workerd\\n", { headers: { "Content-Type": "text/plain" } });
  return new Response("not found", { status: 404 });
} }`;
const mf = new Miniflare({ modules: true, script, port: Number(port), host: "127.0.0.1" });
await mf.ready;
console.log("ready");
process.on("SIGTERM", async () => {
  await mf.dispose();
  process.exit(0);
});
