import { defineConfig, type Plugin } from "vite";

// The most script a page loads at start: every page loads the whole app.
const scriptBudget = 200 * 1024;
// The most a chunk loaded on demand may weigh: the video player (hls.js's
// light build), fetched only when a ready video is played.
const lazyBudget = 400 * 1024;

// budget fails the build when the script loaded at start (the entry and
// what it imports) grows past scriptBudget, or a chunk loaded on demand
// past lazyBudget.
function budget(): Plugin {
  return {
    name: "script-budget",
    generateBundle(_, bundle) {
      const chunks = new Map<string, { code: string; imports: string[]; isEntry: boolean }>();
      for (const [name, out] of Object.entries(bundle)) if (out.type === "chunk") chunks.set(name, out);
      const start = new Set<string>();
      const visit = (name: string) => {
        if (start.has(name)) return;
        start.add(name);
        for (const i of chunks.get(name)?.imports ?? []) visit(i);
      };
      for (const [name, c] of chunks) if (c.isEntry) visit(name);
      let total = 0;
      for (const name of start) total += chunks.get(name)!.code.length;
      if (total > scriptBudget) this.error(`the dashboard's script is ${total} bytes, over its budget of ${scriptBudget}`);
      for (const [name, c] of chunks) {
        if (!start.has(name) && c.code.length > lazyBudget) this.error(`the chunk ${name} is ${c.code.length} bytes, over the on-demand budget of ${lazyBudget}`);
      }
    },
  };
}

// The build goes where package controlplane/dashboard embeds it from.
export default defineConfig({
  plugins: [budget()],
  build: {
    outDir: "../../controlplane/dashboard/site/dist",
    emptyOutDir: true,
    target: "es2022",
    // No inline polyfill script: the CSP allows scripts from files only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
  oxc: {
    jsx: { runtime: "automatic", importSource: "preact" },
  },
  // npm run dev: Vite serves the pages, the API is a `make run` on :7070.
  server: {
    proxy: { "/api": "http://127.0.0.1:7070" },
  },
});
