package deploys_test

import (
	"os/exec"
	"strings"
	"testing"
)

// siteBuildJS is a static site generator made of node alone: it writes
// dist/ from the project's variable (build-time variables work).
const siteBuildJS = `
const fs = require("fs");
fs.mkdirSync("dist/about", {recursive: true});
fs.writeFileSync("dist/index.html", "<h1>" + process.env.TITLE + "</h1>");
fs.writeFileSync("dist/about/index.html", "about");
fs.writeFileSync("dist/.env", "SECRET=1");
// Links leaving the build directory are never followed into the output.
fs.symlinkSync("/etc/hostname", "dist/leak.txt");
fs.symlinkSync("/etc", "dist/etc");
fs.symlinkSync(".", "dist/loop");
console.log("generated 2 pages");
`

// appServerJS is a server app using a dependency the build installs
// (npm install of a file: dependency works offline).
const appServerJS = `
const http = require("http"), greet = require("greet"), fs = require("fs");
const built = fs.readFileSync("built.txt", "utf8");
http.createServer((req, res) => res.end(greet("world") + " " + built)).listen(process.env.PORT, "127.0.0.1", () => console.log("up"));
`

type builtDetail struct {
	Deployment struct{ ID, State, Error, Kind string } `json:"deployment"`
	Log        []struct{ Line string }                 `json:"log"`
	Files      []struct{ Path string }                 `json:"files"`
}

func (d builtDetail) text() string {
	var b strings.Builder
	for _, l := range d.Log {
		b.WriteString(l.Line + "\n")
	}
	return b.String()
}

func (d builtDetail) paths() string {
	var ps []string
	for _, f := range d.Files {
		ps = append(ps, f.Path)
	}
	return strings.Join(ps, ",")
}

func (s *site) deployBuilt(t *testing.T, commit int) builtDetail {
	t.Helper()
	var out struct{ Deployment struct{ ID string } }
	s.env.Owner.Must(202, "POST", "/api/repos/"+s.repo+"/deploy", map[string]any{"projectId": s.project, "commit": commit}).JSON(t, &out)
	s.env.CP.Deploys().Wait()
	var d builtDetail
	s.env.Owner.Must(200, "GET", "/api/deployments/"+out.Deployment.ID, nil).JSON(t, &d)
	return d
}

// TestBuilds runs real npm builds offline in the runtime's sandbox: a
// static site whose build script is detected, a failed build that leaves
// production serving, an explicit build with a wrong output, and a Node
// app whose dependency the build installs.
func TestBuilds(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("controlplane/deploys: npm not found (apt-get install nodejs npm)")
	}
	env := newRuntimeEnv(t, "")
	s := newSite(t, env.Env, "Built")
	setVar(t, env.Env, s.project, "TITLE", "Built here")
	pkg := `{"name":"site","version":"1.0.0","private":true,"scripts":{"build":"node build.js"}}`

	d1 := s.deployBuilt(t, s.pushFiles(t, map[string]string{"package.json": pkg, "build.js": siteBuildJS}, nil))
	if d1.Deployment.State != "live" {
		t.Fatalf("static build: %+v\n%s", d1.Deployment, d1.text())
	}
	for _, want := range []string{"build (detected: npm): 1 step(s)", "build | build: npm run build", "build | generated 2 pages", "build: serving dist",
		"omitted private file .env", "live at"} {
		if !strings.Contains(d1.text(), want) {
			t.Fatalf("log lacks %q:\n%s", want, d1.text())
		}
	}
	// A link loop within the build ends after a few levels.
	if got := d1.paths(); !strings.HasPrefix(got, "about/index.html,index.html,loop/about/index.html,loop/index.html,loop/loop/") ||
		strings.Contains(got, "leak") || strings.Contains(got, "etc/") || strings.Count(got, ",") > 12 {
		t.Fatalf("served files %s", got)
	}
	var logs logsAnswer
	env.Owner.Must(200, "GET", "/api/projects/"+s.project+"/logs?source=build&stream=stdout", nil).JSON(t, &logs)
	if !strings.Contains(logsText(logs.Lines), "build stdout: generated 2 pages") {
		t.Fatalf("project log of the build:\n%s", logsText(logs.Lines))
	}

	t.Run("failed build keeps production", func(t *testing.T) {
		d := s.deployBuilt(t, s.pushFiles(t, map[string]string{"package.json": pkg, "build.js": `console.error("syntax broke"); process.exit(2)`}, nil))
		if d.Deployment.State != "failed" || !strings.Contains(d.Deployment.Error, "the build step (npm run build) failed with exit status 2") ||
			!strings.Contains(d.Deployment.Error, "syntax broke") {
			t.Fatalf("failed build: %+v\n%s", d.Deployment, d.text())
		}
		var p struct {
			Serving struct {
				Deployment struct{ ID string } `json:"deployment"`
			} `json:"serving"`
		}
		env.Owner.Must(200, "GET", "/api/projects/"+s.project, nil).JSON(t, &p)
		if p.Serving.Deployment.ID != d1.Deployment.ID {
			t.Fatalf("serving %s after a failed build, want %s", p.Serving.Deployment.ID, d1.Deployment.ID)
		}
	})
	t.Run("explicit build with a missing output", func(t *testing.T) {
		d := s.deployBuilt(t, s.pushFiles(t, map[string]string{"package.json": pkg, "build.js": siteBuildJS,
			"platform.json": `{"build": {"command": "node build.js", "output": "site"}}`}, nil))
		if d.Deployment.State != "failed" || !strings.Contains(d.Deployment.Error, "did not make its output directory site") {
			t.Fatalf("missing output: %+v\n%s", d.Deployment, d.text())
		}
	})
	t.Run("build off", func(t *testing.T) {
		d := s.deployBuilt(t, s.pushFiles(t, map[string]string{"package.json": pkg, "index.html": "as is", "platform.json": `{"build": {}}`}, nil))
		if d.Deployment.State != "live" || strings.Contains(d.text(), "npm run build") || !strings.Contains(d.paths(), "index.html") {
			t.Fatalf("build off: %+v\n%s", d.Deployment, d.text())
		}
	})
	t.Run("app with installed dependencies", func(t *testing.T) {
		a := newSite(t, env.Env, "Node app")
		appPkg := `{"name":"app","version":"1.0.0","private":true,"dependencies":{"greet":"file:./greet"},
			"scripts":{"build":"node -e \"require('fs').writeFileSync('built.txt','built')\""}}`
		d := a.deployBuilt(t, a.pushFiles(t, map[string]string{"package.json": appPkg, "server.js": appServerJS,
			"greet/package.json": `{"name":"greet","version":"1.0.0","main":"index.js"}`,
			"greet/index.js":     `module.exports = n => "hello " + n;`,
			"platform.json":      `{"kind": "app", "run": ["node", "server.js"]}`}, nil))
		if d.Deployment.State != "live" {
			t.Fatalf("app build: %+v\n%s", d.Deployment, d.text())
		}
		for _, want := range []string{"build | install: npm install", "build | build: npm run build", "server app: healthy"} {
			if !strings.Contains(d.text(), want) {
				t.Fatalf("log lacks %q:\n%s", want, d.text())
			}
		}
		if !strings.Contains(d.paths(), "node_modules/greet/index.js") {
			t.Fatalf("kept files %s", d.paths())
		}
		o := a.origin(t)
		if o == nil {
			t.Fatal("no edge entry")
		}
		mustGet(t, o.Origin+"/", "hello world built")
	})
}
