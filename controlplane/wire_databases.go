package controlplane

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/databases"
)

func init() { wirings = append(wirings, wiring{name: "databases", wire: wireDatabases}) }

// databaseServices finds the databases service of a control plane.
var databaseServices sync.Map // *ControlPlane -> *databases.Service

// Databases returns the control plane's databases service (operators
// adjust its limits through it; tests reach it the same way).
func (cp *ControlPlane) Databases() *databases.Service {
	s, _ := databaseServices.Load(cp)
	svc, _ := s.(*databases.Service)
	return svc
}

func wireDatabases(ctx context.Context, cp *ControlPlane) error {
	svc, err := databases.New(ctx, databases.Config{Dir: filepath.Join(cp.cfg.DataDir, "databases")}, databases.Deps{
		DB: cp.DB, Clock: cp.cfg.Clock, Audit: cp.Audit, Meter: cp.Meter, Projects: cp.Projects, Plans: cp.Accounts, Logger: cp.cfg.Logger,
	})
	if err != nil {
		return err
	}
	databaseServices.Store(cp, svc)
	cp.OnClose(func() error {
		databaseServices.Delete(cp)
		return svc.Close()
	})
	cp.Projects.AddDependent(svc)
	h := databases.Handlers{S: svc}
	const G, P, A, D = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	cp.AddRoutes(
		// Databases: the database's project is known once it is loaded, so
		// the handlers check it again (a project key passes here only for
		// its own project's routes).
		api.Route{Method: P, Path: "/api/projects/{id}/databases", Op: auth.OpDatabaseWrite, ProjectParam: "id", Handler: h.Create, Status: 201, Summary: "Create a database (engine sqlite)", Request: databases.CreateRequest{}, Response: databases.DatabaseAnswer{}},
		api.Route{Method: G, Path: "/api/databases/{id}", Op: auth.OpDatabaseRead, Handler: h.Get, Summary: "Read a database, its endpoint and limits", Response: databases.DatabaseAnswer{}},
		api.Route{Method: P, Path: "/api/databases/{id}", Op: auth.OpDatabaseQuery, Handler: h.Query, MaxBody: databases.MaxQueryBody, Summary: "Run SQL: {sql, params?} or {batch: [{sql, params?}]}, as one transaction", Request: databases.QuerySchema{}, Response: databases.QueryAnswerSchema{}},
		api.Route{Method: A, Path: "/api/databases/{id}", Op: auth.OpDatabaseWrite, Handler: h.Retry, Summary: "Retry a failed create: {action: retry}", Request: databases.PatchRequest{}, Response: databases.DatabaseAnswer{}},
		api.Route{Method: D, Path: "/api/databases/{id}", Op: auth.OpDatabaseWrite, Handler: h.Delete, Summary: "Delete a database for good (later calls answer 410)", Response: api.Deleted{}},
		api.Route{Method: P, Path: "/api/databases/{id}/export", Op: auth.OpDatabaseWrite, Handler: h.Export, Summary: "Start an export, or ask after one with its bookmark", Request: databases.ExportRequest{}, Response: databases.ExportAnswer{}},
		api.Route{Method: G, Path: "/api/databases/{id}/export", Op: auth.OpDatabaseWrite, Handler: h.Download, Summary: "Download a complete export as a .sql file (?bookmark=)"},
	)
	return nil
}
