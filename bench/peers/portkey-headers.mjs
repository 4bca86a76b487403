// Loaded before Portkey's gateway by bench/peers.sh (node --import): makes
// a Response built from a fetch's answer own mutable headers, as the fetch
// standard says a new Response's headers are.
//
// @hono/node-server 1.14.2 to 1.19.19 (the last 1.x, the newest Portkey's
// "^1.3.3" allows) replaces the global Response with a lightweight one
// that, given a fetch's Response as its init, hands out that Response's
// own headers, which are immutable. Portkey builds every streamed answer
// as new Response(stream, upstreamResponse) and then appends its headers
// (x-portkey-trace-id, ...), so each stream fails with "TypeError:
// immutable" and a 500 {"status":"failure","message":"Something went
// wrong"}. @hono/node-server 2.x copies the headers in that case; this
// does the same here, by wrapping the lightweight Response, and changes
// nothing else (the lightweight Response still serves every answer).
import { getRequestListener } from "@hono/node-server";

const Native = globalThis.Response;
// Installs the lightweight Request and Response, as Portkey's serve()
// would on its first call; that call then finds them in place.
getRequestListener(() => new Native(null));
const Light = globalThis.Response;
if (Light === Native) {
  console.error("portkey-headers.mjs: @hono/node-server left the global Response alone; nothing to do");
} else {
  class Response extends Light {
    constructor(body, init) {
      if (init instanceof Native && !(init instanceof Light)) {
        init = { status: init.status, statusText: init.statusText, headers: new Headers(init.headers) };
      }
      super(body, init);
    }
  }
  Object.defineProperty(globalThis, "Response", { value: Response });
}
