package auth

import (
	"errors"
	"testing"
)

// expect is written out by hand from the spec's Authentication section, not
// derived from the table: minimal role, whether a read-only key may do it,
// what a project key may do (own: its own project; none: nothing; listing:
// allowed, filtered), and whether only a signed-in owner may do it.
var expect = map[Op]struct {
	min      Role
	readOnly bool
	project  string // own, none, listing
	owner    bool
	session  bool
}{
	OpWorkspaceRead:  {Viewer, true, "listing", false, false},
	OpProjectList:    {Viewer, true, "listing", false, false},
	OpProjectCreate:  {Developer, false, "none", false, false},
	OpProjectRead:    {Viewer, true, "own", false, false},
	OpProjectUpdate:  {Developer, false, "own", false, false},
	OpProjectDelete:  {Admin, false, "none", false, false}, // an admin's or the owner's session or full workspace key
	OpEnvRead:        {Developer, false, "own", false, false},
	OpEnvWrite:       {Developer, false, "own", false, false},
	OpKeyList:        {Viewer, true, "none", false, false},
	OpKeyCreate:      {Viewer, false, "none", false, false},
	OpKeyRevoke:      {Viewer, false, "none", false, false},
	OpMemberList:     {Viewer, true, "none", false, false},
	OpMemberManage:   {Admin, false, "none", false, false},
	OpAccount:        {Viewer, false, "none", false, true},
	OpEmailVerify:    {Viewer, false, "none", false, false},
	OpBillingRead:    {Admin, true, "none", false, false},
	OpBillingWrite:   {Admin, false, "none", false, false},
	OpAuditRead:      {Admin, true, "none", false, false},
	OpActivityRead:   {Viewer, true, "none", false, false},
	OpUsageRead:      {Viewer, true, "listing", false, false},
	OpSecurityRead:   {Viewer, true, "none", false, false},
	OpShieldRead:     {Viewer, true, "none", false, false},
	OpShieldWrite:    {Admin, false, "none", false, false},
	OpCDNRead:        {Viewer, true, "none", false, false},
	OpCDNWrite:       {Admin, false, "none", false, false},
	OpRepoRead:       {Viewer, true, "none", false, false},
	OpRepoWrite:      {Developer, false, "none", false, false},
	OpRepoDeploy:     {Developer, false, "none", false, false},
	OpDatabaseRead:   {Viewer, true, "own", false, false},
	OpDatabaseWrite:  {Developer, false, "own", false, false},
	OpDatabaseQuery:  {Developer, false, "own", false, false}, // full access even for SELECT
	OpVectorRead:     {Viewer, true, "own", false, false},     // read-only keys can query vectors
	OpVectorWrite:    {Developer, false, "own", false, false},
	OpMediaRead:      {Viewer, true, "own", false, false},
	OpMediaSecrets:   {Developer, false, "own", false, false}, // secrets: like env values
	OpMediaWrite:     {Developer, false, "own", false, false},
	OpPaymentsRead:   {Viewer, true, "own", false, false}, // read-only keys look up and list payments
	OpPaymentsWrite:  {Developer, false, "own", false, false},
	OpPaymentsPayout: {Owner, false, "none", true, false},
	OpAIRead:         {Viewer, true, "none", false, false},
	OpAIUse:          {Developer, false, "none", false, false},
	OpAgentRead:      {Viewer, true, "own", false, false},
	OpAgentWrite:     {Developer, false, "own", false, false},
	OpAgentRun:       {Developer, false, "own", false, false},
	OpMailRead:       {Viewer, true, "own", false, false},
	OpMailSend:       {Developer, false, "own", false, false},
	OpMailDomains:    {Developer, false, "own", false, false},
	OpAuthPoolRead:   {Viewer, true, "own", false, false},
	OpAuthPoolWrite:  {Developer, false, "own", false, false},
	OpAuthUserRead:   {Developer, false, "own", false, false}, // app users' e-mail addresses: like env values
	OpMemoryRead:     {Viewer, true, "own", false, false},     // read-only keys read stores
	OpMemoryWrite:    {Developer, false, "own", false, false},
	OpBucketRead:     {Viewer, true, "own", false, false},
	OpBucketWrite:    {Developer, false, "own", false, false},
	OpBucketData:     {Developer, false, "own", false, false}, // objects' bytes and signed URLs: like env values
	// A person makes workspaces, leaves one, and its owner deletes it,
	// signed in; the owner changes the plan (paid from the Balance).
	OpWorkspaceCreate: {Viewer, false, "none", false, true},
	OpWorkspaceLeave:  {Viewer, false, "none", false, true},
	OpWorkspaceDelete: {Owner, false, "none", false, true},
	OpWorkspacePlan:   {Owner, false, "none", false, false},
}

// pendingAllowed is what a workspace waiting for its owner's e-mail
// verification may still do: read itself, verify, manage the sign-in,
// leave or delete itself.
var pendingAllowed = map[Op]bool{OpWorkspaceRead: true, OpAccount: true, OpEmailVerify: true, OpWorkspaceLeave: true, OpWorkspaceDelete: true}

// A pending workspace's owner, by session, is refused every other
// operation with email_unverified.
func TestPendingWorkspace(t *testing.T) {
	for _, op := range Ops() {
		t.Run(string(op), func(t *testing.T) {
			p := Principal{WorkspaceID: "ws", MemberID: "m", Role: Owner, Session: true, Pending: true}
			err := Authorize(&p, op, "")
			var d *Denied
			switch {
			case pendingAllowed[op] && err != nil && (!errors.As(err, &d) || d.Code == "email_unverified"):
				t.Fatalf("refused: %v", err)
			case !pendingAllowed[op] && (!errors.As(err, &d) || d.Code != "email_unverified"):
				t.Fatalf("err = %v, want email_unverified", err)
			}
		})
	}
}

type caller struct {
	name string
	p    Principal
}

// callers returns every credential kind for every role, and for a principal
// without a role.
func callers() []caller {
	var out []caller
	for _, r := range []Role{RoleNone, Viewer, Developer, Admin, Owner} {
		base := Principal{WorkspaceID: "ws", MemberID: "m", Role: r}
		s := base
		s.Session = true
		full := base
		full.KeyID = "k"
		ro := full
		ro.ReadOnly = true
		prj := full
		prj.ProjectID = "p1"
		roPrj := prj
		roPrj.ReadOnly = true
		role := r.String()
		if r == RoleNone {
			role = "none"
		}
		out = append(out,
			caller{role + "/session", s},
			caller{role + "/full", full},
			caller{role + "/read_only", ro},
			caller{role + "/project", prj},
			caller{role + "/read_only_project", roPrj},
		)
	}
	return out
}

func TestPermissionMatrix(t *testing.T) {
	if len(expect) != len(Ops()) {
		t.Fatalf("table has %d ops, expectations %d: every op needs a hand-written row", len(Ops()), len(expect))
	}
	for _, op := range Ops() {
		want, ok := expect[op]
		if !ok {
			t.Fatalf("no expectation for %s", op)
		}
		for _, c := range callers() {
			for _, target := range []string{"", "p1", "p2"} {
				t.Run(string(op)+"/"+c.name+"/project="+target, func(t *testing.T) {
					p := c.p
					err := Authorize(&p, op, target)
					allowed := err == nil
					should := p.Role >= want.min
					readOnly := p.ReadOnly
					projectKey := p.ProjectID != ""
					switch {
					case want.owner:
						should = p.Session && p.Role == Owner
					case want.session && !p.Session:
						should = false
					default:
						if readOnly && !want.readOnly {
							should = false
						}
						if projectKey {
							switch want.project {
							case "none":
								should = false
							case "own":
								if target != p.ProjectID {
									should = false
								}
							}
						}
					}
					if allowed != should {
						t.Fatalf("Authorize = %v, want allowed=%v", err, should)
					}
					if err != nil {
						var d *Denied
						if !errors.As(err, &d) || d.Code == "" || d.Status() != 403 {
							t.Fatalf("refusal %v is not a 403 *Denied with a code", err)
						}
					}
				})
			}
		}
	}
}

// Deleting a project, written out row by row: every key kind of every role.
// A full workspace key deletes only when its member's role may.
func TestProjectDeleteByKeyKindAndRole(t *testing.T) {
	const ok = ""
	want := map[string]string{ // caller name -> refusal code, ok when allowed
		"none/session": "insufficient_role", "none/full": "insufficient_role",
		"none/read_only": "read_only_key", "none/project": "workspace_key_required", "none/read_only_project": "read_only_key",
		"viewer/session": "insufficient_role", "viewer/full": "insufficient_role",
		"viewer/read_only": "read_only_key", "viewer/project": "workspace_key_required", "viewer/read_only_project": "read_only_key",
		"developer/session": "insufficient_role", "developer/full": "insufficient_role",
		"developer/read_only": "read_only_key", "developer/project": "workspace_key_required", "developer/read_only_project": "read_only_key",
		"admin/session": ok, "admin/full": ok,
		"admin/read_only": "read_only_key", "admin/project": "workspace_key_required", "admin/read_only_project": "read_only_key",
		"owner/session": ok, "owner/full": ok,
		"owner/read_only": "read_only_key", "owner/project": "workspace_key_required", "owner/read_only_project": "read_only_key",
	}
	cs := callers()
	if len(cs) != len(want) {
		t.Fatalf("%d callers, %d expectations", len(cs), len(want))
	}
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			code, ok := want[c.name]
			if !ok {
				t.Fatalf("no expectation for %s", c.name)
			}
			p := c.p
			err := Authorize(&p, OpProjectDelete, "p1")
			var got string
			if err != nil {
				var d *Denied
				if !errors.As(err, &d) {
					t.Fatalf("refusal %v is not a *Denied", err)
				}
				got = d.Code
			}
			if got != code {
				t.Fatalf("Authorize = %v (code %q), want code %q", err, got, code)
			}
		})
	}
}

// The spec's invariants, checked across the whole table.
func TestPermissionInvariants(t *testing.T) {
	for _, op := range Ops() {
		rule, _ := RuleOf(op)
		for _, c := range callers() {
			p := c.p
			for _, target := range []string{"", "p1"} {
				if Authorize(&p, op, target) != nil {
					continue
				}
				// A key never does more than its member's role.
				if p.Role < rule.MinRole {
					t.Errorf("%s: %s (role %s) allowed below %s", op, c.name, p.Role, rule.MinRole)
				}
				s := Principal{WorkspaceID: p.WorkspaceID, MemberID: p.MemberID, Role: p.Role, Session: true}
				if err := Authorize(&s, op, target); err != nil {
					t.Errorf("%s: %s allowed where its member's own session is refused (%v)", op, c.name, err)
				}
			}
			if p.ReadOnly && rule.Write && Authorize(&p, op, p.ProjectID) == nil {
				t.Errorf("%s: read-only key %s may change something", op, c.name)
			}
			if p.ProjectID != "" && Authorize(&p, op, "other-project") == nil && rule.Scope == ScopeProject {
				t.Errorf("%s: project key reached another project", op)
			}
			if !p.Session && Authorize(&p, OpPaymentsPayout, p.ProjectID) == nil {
				t.Errorf("an API key may move money out")
			}
		}
	}
	viewer := &Principal{WorkspaceID: "ws", Role: Viewer, Session: true}
	if Authorize(viewer, OpEnvRead, "p") == nil {
		t.Error("a viewer may read environment values")
	}
	if err := Authorize(nil, OpProjectRead, "p"); err == nil || err.(*Denied).Status() != 401 {
		t.Errorf("no principal: %v, want 401", err)
	}
	if err := Authorize(&Principal{WorkspaceID: "ws", Role: Owner}, Op("nope"), ""); err == nil {
		t.Error("an unknown op was allowed")
	}
	money := &Principal{WorkspaceID: "ws", Role: Owner, KeyID: "k"}
	if err := Authorize(money, OpPaymentsPayout, "p"); err == nil || err.(*Denied).Code != "payouts_require_owner" {
		t.Errorf("owner key moving money: %v, want payouts_require_owner", err)
	}
}
