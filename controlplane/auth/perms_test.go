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
	fullKey  bool // any full workspace key may, whatever its role
}{
	OpWorkspaceRead:  {Viewer, true, "listing", false, false, false},
	OpProjectList:    {Viewer, true, "listing", false, false, false},
	OpProjectCreate:  {Developer, false, "none", false, false, false},
	OpProjectRead:    {Viewer, true, "own", false, false, false},
	OpProjectUpdate:  {Developer, false, "own", false, false, false},
	OpProjectDelete:  {Admin, false, "none", false, false, true}, // admin or a full workspace key
	OpEnvRead:        {Developer, false, "own", false, false, false},
	OpEnvWrite:       {Developer, false, "own", false, false, false},
	OpKeyList:        {Viewer, true, "none", false, false, false},
	OpKeyCreate:      {Viewer, false, "none", false, false, false},
	OpKeyRevoke:      {Viewer, false, "none", false, false, false},
	OpMemberList:     {Viewer, true, "none", false, false, false},
	OpMemberManage:   {Admin, false, "none", false, false, false},
	OpAccount:        {Viewer, false, "none", false, true, false},
	OpEmailVerify:    {Viewer, false, "none", false, false, false},
	OpBillingRead:    {Admin, true, "none", false, false, false},
	OpBillingWrite:   {Admin, false, "none", false, false, false},
	OpAuditRead:      {Admin, true, "none", false, false, false},
	OpActivityRead:   {Viewer, true, "none", false, false, false},
	OpUsageRead:      {Viewer, true, "listing", false, false, false},
	OpSecurityRead:   {Viewer, true, "none", false, false, false},
	OpShieldRead:     {Viewer, true, "none", false, false, false},
	OpShieldWrite:    {Admin, false, "none", false, false, false},
	OpCDNRead:        {Viewer, true, "none", false, false, false},
	OpCDNWrite:       {Admin, false, "none", false, false, false},
	OpRepoRead:       {Viewer, true, "none", false, false, false},
	OpRepoWrite:      {Developer, false, "none", false, false, false},
	OpRepoDeploy:     {Developer, false, "none", false, false, false},
	OpDatabaseRead:   {Viewer, true, "own", false, false, false},
	OpDatabaseWrite:  {Developer, false, "own", false, false, false},
	OpDatabaseQuery:  {Developer, false, "own", false, false, false}, // full access even for SELECT
	OpVectorRead:     {Viewer, true, "own", false, false, false},     // read-only keys can query vectors
	OpVectorWrite:    {Developer, false, "own", false, false, false},
	OpMediaRead:      {Viewer, true, "own", false, false, false},
	OpMediaSecrets:   {Developer, false, "own", false, false, false}, // secrets: like env values
	OpMediaWrite:     {Developer, false, "own", false, false, false},
	OpPaymentsRead:   {Viewer, true, "own", false, false, false}, // read-only keys look up and list payments
	OpPaymentsWrite:  {Developer, false, "own", false, false, false},
	OpPaymentsPayout: {Owner, false, "none", true, false, false},
	OpAIRead:         {Viewer, true, "none", false, false, false},
	OpAIUse:          {Developer, false, "none", false, false, false},
	OpAgentRead:      {Viewer, true, "own", false, false, false},
	OpAgentWrite:     {Developer, false, "own", false, false, false},
	OpAgentRun:       {Developer, false, "own", false, false, false},
}

type caller struct {
	name string
	p    Principal
	kind string // session, full, read_only, project
}

// callers returns every credential kind for every role.
func callers() []caller {
	var out []caller
	for _, r := range []Role{Viewer, Developer, Admin, Owner} {
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
		out = append(out,
			caller{r.String() + "/session", s, "session"},
			caller{r.String() + "/full", full, "full"},
			caller{r.String() + "/read_only", ro, "read_only"},
			caller{r.String() + "/project", prj, "project"},
			caller{r.String() + "/read_only_project", roPrj, "read_only_project"},
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
					if want.fullKey && c.kind == "full" {
						should = true
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

// The spec's invariants, checked across the whole table.
func TestPermissionInvariants(t *testing.T) {
	for _, op := range Ops() {
		rule, _ := RuleOf(op)
		for _, c := range callers() {
			p := c.p
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
