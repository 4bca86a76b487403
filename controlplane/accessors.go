package controlplane

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/domains"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/media"
	"github.com/svcplatform/platform/controlplane/memory"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/security"
	"github.com/svcplatform/platform/controlplane/shield"
)

// Media returns the media area (its tests process uploads through it).
func (cp *ControlPlane) Media() *media.Service { return cp.media }

// Mail returns the e-mail area.
func (cp *ControlPlane) Mail() *mail.Service { return cp.mail }

// Domains returns the custom domains area.
func (cp *ControlPlane) Domains() *domains.Service { return cp.domains }

// Memory returns the memory stores area.
func (cp *ControlPlane) Memory() *memory.Service { return cp.memory }

// AI returns the AI gateway.
func (cp *ControlPlane) AI() *ai.Service { return cp.ai }

// Config returns the provisioned configuration.
func (cp *ControlPlane) Config() Config { return cp.cfg }

// Handler is the API's HTTP handler.
func (cp *ControlPlane) Handler() http.Handler { return cp.handler }

// Routes returns the route table.
func (cp *ControlPlane) Routes() []api.Route { return cp.routes }

// Metrics returns the control plane's metrics.
func (cp *ControlPlane) Metrics() *Metrics { return cp.metrics }

// KeyCalls returns the api_key_calls counter (Flush writes what it holds).
func (cp *ControlPlane) KeyCalls() *metering.KeyCalls { return cp.keyCalls }

// EdgeSync returns the edge configuration service: `platform serve` takes
// its in-process edge's token from EdgeSync().EnsureLocalToken.
func (cp *ControlPlane) EdgeSync() *edgesync.Service { return cp.edgeSync }

// Deploys returns the deploys service.
func (cp *ControlPlane) Deploys() *deploys.Service { return cp.deploys }

// Blobs returns the content-addressed blob store under DATA/blobs, which an
// in-process edge may read deployed files from directly.
func (cp *ControlPlane) Blobs() blobs.Backend { return cp.blobs }

// Databases returns the databases service (operators adjust its limits
// through it; tests reach it the same way).
func (cp *ControlPlane) Databases() *databases.Service { return cp.databases }

// Repos returns the repos service.
func (cp *ControlPlane) Repos() *repos.Service { return cp.repos }

// CDN returns the CDN settings service.
func (cp *ControlPlane) CDN() *cdn.Service { return cp.cdn }

// Shield returns the Shield service.
func (cp *ControlPlane) Shield() *shield.Service { return cp.shield }

// Security returns the security overview service.
func (cp *ControlPlane) Security() *security.Service { return cp.security }

// Buckets returns the storage buckets area.
func (cp *ControlPlane) Buckets() *buckets.Service { return cp.buckets }
