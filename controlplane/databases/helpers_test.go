package databases_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/plans"
)

// env is a control plane with one project, as its owner.
type env struct {
	*cptest.Env
	svc     *databases.Service
	project string
}

func newEnv(t *testing.T, plan plans.Name) *env {
	t.Helper()
	e := newCP(t, cptest.Options{Plan: plan})
	return &env{Env: e, svc: e.CP.Databases(), project: e.CreateProject("app")}
}

// create makes a database in the env's project and returns its id.
func (e *env) create(name string) string {
	e.T.Helper()
	var out databases.DatabaseAnswer
	e.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": name}).JSON(e.T, &out)
	return out.Database.ID
}

// sqlBody is the body of a query request.
func sqlBody(sql string, params ...any) map[string]any {
	b := map[string]any{"sql": sql}
	if params != nil {
		b["params"] = params
	}
	return b
}

// answer is a decoded query answer.
type answer struct {
	Results    []map[string]any `json:"results"`
	Statements int              `json:"statements"`
	Meta       databases.Meta   `json:"meta"`
	Batch      []struct {
		Results []map[string]any `json:"results"`
		Meta    databases.Meta   `json:"meta"`
	} `json:"batch"`
}

// run sends a query and fails unless it answers 200.
func (e *env) run(c *cptest.Client, id, sql string, params ...any) answer {
	e.T.Helper()
	var a answer
	c.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody(sql, params...)).JSON(e.T, &a)
	return a
}

// errorOf decodes an error answer's object.
func errorOf(t *testing.T, r *cptest.Response) map[string]any {
	t.Helper()
	var body struct {
		Error map[string]any `json:"error"`
	}
	r.JSON(t, &body)
	if body.Error == nil {
		t.Fatalf("not an error answer: %d %s", r.Status, r.Body)
	}
	return body.Error
}

// expect checks an answer's status and error code.
func expect(t *testing.T, r *cptest.Response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	e := errorOf(t, r)
	if code != "" && e["code"] != code {
		t.Fatalf("code %v, want %s: %s", e["code"], code, r.Body)
	}
	return e
}

func num(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	}
	panic(fmt.Sprintf("not a number: %#v", v))
}
