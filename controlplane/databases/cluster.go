package databases

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/store"
)

// removedChannel carries the id of a database deleted on any replica (a
// project deleted there takes its databases along), so that its owner
// removes the file at once rather than at its next start.
const removedChannel = "databases_removed"

// cluster returns the forwarder among replicas; nil on a single node.
func (s *Service) cluster() *placement.Forwarder { return s.fwd.Load() }

// SetCluster makes a running service one replica among several sharing
// the metadata database: each database belongs to the node that created
// it, requests for it reaching this node are forwarded to its owner, and
// its file is never opened elsewhere. Deps.Cluster does the same at New
// (and also fails only this node's interrupted creates); SetCluster is
// for a service already built and running (tests). It adopts the databases whose files
// are in this node's directory and have no owner yet.
func (s *Service) SetCluster(ctx context.Context, f *placement.Forwarder) error {
	if f == nil {
		return errors.New("databases: no forwarder")
	}
	if !s.fwd.CompareAndSwap(nil, f) {
		return errors.New("databases: already one of several replicas")
	}
	s.records.shared.Store(true)
	if err := s.sweep(ctx); err != nil {
		return err
	}
	close(s.clustered) // Run follows removals from now on
	return nil
}

// route forwards a request for database {id} to its owner when this node
// is not the owner; it returns true when the request was answered (or
// refused with the error returned). A database the caller's workspace
// does not have answers 404 here, never forwarded: which node holds
// another workspace's database is nobody else's business.
func (h Handlers) route(w http.ResponseWriter, r *http.Request) (bool, error) {
	f := h.S.cluster()
	if f == nil {
		return false, nil
	}
	id := r.PathValue("id")
	if p := api.PrincipalFrom(r.Context()); p != nil {
		if _, err := h.S.records.get(r.Context(), p.WorkspaceID, id); errors.Is(err, store.ErrNotFound) {
			return true, api.NotFound("database")
		} else if err != nil {
			return true, err
		}
	}
	return f.Route(w, r, placement.KindDatabase, id)
}

// origin is the scheme and host the request reached the API on: for a
// request another replica forwarded (verified), the scheme the client
// used there.
func (h Handlers) origin(r *http.Request) string {
	if u := h.S.cfg.PublicBaseURL; u != "" {
		return strings.TrimRight(u, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if f := h.S.cluster(); f != nil && r.Header.Get("X-Forwarded-Proto") == "https" {
		if peer, err := f.FromPeer(r); err == nil && peer {
			scheme = "https"
		}
	}
	return scheme + "://" + r.Host
}

// mine tells whether this node owns database id: it was placed here, or
// it has no placement (made before the node had an identity).
func (s *Service) mine(ctx context.Context, id string) (bool, error) {
	f := s.cluster()
	if f == nil {
		return true, nil
	}
	owner, err := f.Registry().OwnerID(ctx, placement.KindDatabase, id)
	if errors.Is(err, placement.ErrUnplaced) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return owner == f.Registry().Config().NodeID, nil
}

// adopt claims a database whose file is in this node's directory; a file
// of a database another node owns is reported and left in place (it is
// never opened: requests go to the owner).
func (s *Service) adopt(ctx context.Context, id string) {
	f := s.cluster()
	if f == nil {
		return
	}
	owner, err := f.Registry().Claim(ctx, s.d.DB, placement.KindDatabase, id)
	switch {
	case err != nil:
		s.d.Logger.Warn("databases: claiming a local database", "database", id, "err", err)
	case owner != f.Registry().Config().NodeID:
		s.d.Logger.Warn("databases: this node's directory holds a file of a database another node owns; left in place, never opened here",
			"database", id, "owner", owner)
	}
}

// followRemovals removes the files of databases deleted on other replicas
// until ctx ends. A removal announced before it listened is caught by the
// sweep that follows the subscription.
func (s *Service) followRemovals(ctx context.Context) error {
	ch, err := s.d.DB.Notifier().Listen(ctx, removedChannel)
	if err != nil {
		return fmt.Errorf("databases: listen for removals: %w", err)
	}
	sweep := func() {
		if err := s.sweep(ctx); err != nil && ctx.Err() == nil {
			s.d.Logger.Warn("databases: sweep for removals", "err", err)
		}
	}
	sweep()
	for {
		select {
		case <-ctx.Done():
			return nil
		case id, ok := <-ch:
			if !ok {
				return nil
			}
			if id == store.Reconnected {
				sweep()
				continue
			}
			s.dropRemoved(ctx, id)
		}
	}
}

// dropRemoved removes the local files of database id once its record says
// deleted.
func (s *Service) dropRemoved(ctx context.Context, id string) {
	if !strings.HasPrefix(id, "db_") || strings.ContainsAny(id, `/\.`) {
		return
	}
	rec, err := s.records.byID(ctx, id)
	if err != nil || rec.Status != StatusDeleted {
		return
	}
	if _, err := os.Stat(s.path(id)); errors.Is(err, os.ErrNotExist) {
		return
	}
	s.storage.forget(rec.Workspace, id)
	if err := errors.Join(s.open.remove(id), removeFiles(s.path(id)), os.RemoveAll(filepath.Join(s.exportDir(), id))); err != nil {
		s.d.Logger.Warn("databases: removing files of a database deleted on another replica", "database", id, "err", err)
	}
	if f := s.removed.Load(); f != nil {
		(*f)(id)
	}
}

// usedStorageShared is usedStorage among replicas: the sizes of the
// databases this node holds as measured here, the others' as their owners
// last recorded them (every flush).
func (s *Service) usedStorageShared(ctx context.Context, workspace string) ([]string, int64, error) {
	recorded, ids, err := s.records.readySizes(ctx, workspace)
	if err != nil {
		return nil, 0, err
	}
	st := s.storage
	var total int64
	for _, id := range ids {
		if n, ok := st.localSize(id); ok {
			total += n
			continue
		}
		if _, err := os.Stat(s.path(id)); err == nil {
			h, err := s.pinned(ctx, id)
			if err == nil {
				h.leave()
				if n, ok := st.localSize(id); ok {
					total += n
					continue
				}
			} else {
				s.d.Logger.Warn("databases: not measured", "database", id, "err", err)
			}
		}
		st.setRemote(id, recorded[id])
		total += recorded[id]
	}
	return ids, total, nil
}
