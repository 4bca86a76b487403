package deploys_test

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/runtime/sandbox"
)

// callerJS is a server app that calls the platform's API with what it
// was given: GET /call?path=/api/... answers "<status> <body>".
const callerJS = `
const http = require("http");
http.createServer(async (req, res) => {
  const u = new URL(req.url, "http://x");
  if (u.pathname === "/env") return res.end(process.env[u.searchParams.get("k")] || "");
  try {
    const r = await fetch(process.env.PLATFORM_API_URL + u.searchParams.get("path"), {headers: {Authorization: "Bearer " + process.env.PLATFORM_TOKEN}});
    res.end(r.status + " " + await r.text());
  } catch (e) {
    res.end("error " + e.message + " " + (e.cause && e.cause.message));
  }
}).listen(process.env.PORT, () => console.log("listening"));
`

// TestDeploymentKey: an app gets PLATFORM_API_URL and a key limited to
// its project, reaches the API with them (under bubblewrap through the
// bridge inside its namespace), and the key stops working once the next
// deploy replaces the app.
func TestDeploymentKey(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("controlplane/deploys: node not found (apt-get install nodejs)")
	}
	boxes := []sandbox.Sandbox{sandbox.None{}}
	if b := (&sandbox.Bwrap{}); b.Provision() == nil {
		boxes = append(boxes, b)
	} else if os.Getenv("CI") != "" {
		t.Log("controlplane/deploys: the deployment key under bubblewrap is not tested here (needs root, bwrap, prlimit)")
	}
	for _, box := range boxes {
		t.Run(box.Name(), func(t *testing.T) {
			base, err := os.MkdirTemp("", "deploys-key-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(base) })
			if err := os.Chmod(base, 0o711); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(base, "data")
			if b, ok := box.(*sandbox.Bwrap); ok {
				b.Hide = []string{data}
			}
			env := newRuntimeEnvIn(t, data, box, filepath.Join(base, "runtime"))
			env.CP.Deploys().SetKeys(env.CP.Accounts)
			env.eng.SetAPI(env.Server.URL)
			s := newSite(t, env.Env, "Keyed")
			other := newSite(t, env.Env, "Elsewhere")
			files := map[string]string{"server.js": callerJS, "platform.json": `{"kind":"app","run":["node","server.js"]}`}
			d1 := s.deployRT(t, s.pushFiles(t, files, nil))
			if d1.Deployment.State != "live" || !strings.Contains(d1.text(), "key: PLATFORM_TOKEN holds a key limited to this project") {
				t.Fatalf("%+v\n%s", d1.Deployment, d1.text())
			}
			o := s.origin(t)
			_, apiURL := get(t, o.Origin+"/env?k=PLATFORM_API_URL")
			if box.Name() == "bwrap" && apiURL != "http://127.0.0.1:7070" {
				t.Fatalf("PLATFORM_API_URL %q inside the sandbox", apiURL)
			}
			_, token := get(t, o.Origin+"/env?k=PLATFORM_TOKEN")
			if token == "" {
				t.Fatal("no PLATFORM_TOKEN")
			}
			call := func(path string) string {
				_, body := get(t, o.Origin+"/call?path="+url.QueryEscape(path))
				return body
			}
			if got := call("/api/projects/" + s.project); !strings.HasPrefix(got, "200 ") {
				t.Fatalf("own project through the API: %s", got)
			}
			for _, path := range []string{"/api/projects/" + other.project, "/api/repos"} {
				if got := call(path); !strings.HasPrefix(got, "403 ") {
					t.Fatalf("%s with the deployment's key: %s", path, got)
				}
			}
			if box.Name() == "bwrap" {
				if got := call("/health"); !strings.HasPrefix(got, "404 ") || !strings.Contains(got, "only /api/") {
					t.Fatalf("outside /api/ through the bridge: %s", got)
				}
			}
			// The next deploy revokes the replaced deployment's key.
			d2 := s.deployRT(t, s.pushFiles(t, map[string]string{"server.js": callerJS + "\n// v2", "platform.json": files["platform.json"]}, nil))
			if d2.Deployment.State != "live" {
				t.Fatalf("%+v\n%s", d2.Deployment, d2.text())
			}
			if r := env.Client(token).Do("GET", "/api/projects/"+s.project, nil); r.Status != 401 {
				t.Fatalf("the replaced deployment's key: %d %s", r.Status, r.Body)
			}
			t.Run("SDK", func(t *testing.T) { sdkApp(t, env, s) })
		})
	}
}

// sdkServerJS queries the project's database through the TypeScript SDK
// with nothing but what the deployment was given.
const sdkServerJS = `
import http from "node:http";
import { Database } from "@svcplatform/sdk";
const db = new Database(process.env.DB_ID);
http.createServer(async (req, res) => {
  try {
    const { results } = await db.query("SELECT 40 + ? AS answer", [2]);
    res.end(String(results[0].answer));
  } catch (e) {
    res.end("error " + e.status + " " + e.code);
  }
}).listen(process.env.PORT);
`

// sdkApp deploys an app using the SDK (sdk/typescript/dist, built by
// go test ./sdk/typescript or npm run build there): it reads its
// database with the injected key, and once the next deploy replaced it
// (while it drains) the same call is refused.
func sdkApp(t *testing.T, env rtEnv, s *site) {
	dist := filepath.Join("..", "..", "sdk", "typescript", "dist")
	if _, err := os.Stat(filepath.Join(dist, "index.js")); err != nil {
		t.Skip("controlplane/deploys: the SDK is not built: run go test ./sdk/typescript (or npm run build in sdk/typescript) first")
	}
	files := map[string]string{"server.mjs": sdkServerJS, "platform.json": `{"kind":"app","run":["node","server.mjs"]}`,
		"node_modules/@svcplatform/sdk/package.json": `{"name":"@svcplatform/sdk","type":"module","main":"./dist/index.js","exports":{".":"./dist/index.js"}}`}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".js") {
			data, err := os.ReadFile(filepath.Join(dist, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files["node_modules/@svcplatform/sdk/dist/"+e.Name()] = string(data)
		}
	}
	m := env.Owner.Must(201, "POST", "/api/projects/"+s.project+"/databases", map[string]any{"name": "main"}).Map(t)
	setVar(t, env.Env, s.project, "DB_ID", m["database"].(map[string]any)["id"].(string))
	d := s.deployRT(t, s.pushFiles(t, files, nil))
	if d.Deployment.State != "live" {
		t.Fatalf("%+v\n%s", d.Deployment, d.text())
	}
	origin := s.origin(t).Origin
	mustGet(t, origin+"/", "42")
	// The next deploy revokes this one's key; it keeps serving while it
	// drains, and its database calls are refused.
	files["server.mjs"] += "\n// v2\n"
	if d2 := s.deployRT(t, s.pushFiles(t, files, nil)); d2.Deployment.State != "live" {
		t.Fatalf("%+v\n%s", d2.Deployment, d2.text())
	}
	mustGet(t, origin+"/", "error 401 invalid_credentials")
}
