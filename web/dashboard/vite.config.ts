import { defineConfig, type Plugin } from "vite";

// The most script a page may load: every page loads the whole app.
const scriptBudget = 200 * 1024;

// budget fails the build when the app's script grows past scriptBudget.
function budget(): Plugin {
  return {
    name: "script-budget",
    generateBundle(_, bundle) {
      let total = 0;
      for (const out of Object.values(bundle)) if (out.type === "chunk") total += out.code.length;
      if (total > scriptBudget) this.error(`the dashboard's script is ${total} bytes, over its budget of ${scriptBudget}`);
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
