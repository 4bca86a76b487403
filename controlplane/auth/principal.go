package auth

// Principal is who is calling: a member acting through an API key or through
// a signed-in dashboard session.
type Principal struct {
	WorkspaceID string
	MemberID    string
	// Role is the effective role: a key never carries more than its member's
	// current role.
	Role Role
	// KeyID and KeyPrefix identify the API key; both empty for a session.
	KeyID     string
	KeyPrefix string
	// ReadOnly is set for read-only keys.
	ReadOnly bool
	// ProjectID is set for a key limited to one project.
	ProjectID string
	// Session is set when the caller signed in to the dashboard.
	Session bool
	// SecondFactor is set for a session whose sign-in passed TOTP.
	SecondFactor bool
	// SessionHash identifies the dashboard session (the SHA-256 of its
	// token), so a password change can end the member's other sessions.
	SessionHash []byte
	// Pending is set while the workspace waits for its owner's e-mail
	// verification (an open sign-up): only operations marked Pending in
	// the permission table are allowed.
	Pending bool
	// Via is "connector" for a key's request made through the assistant
	// connector (header X-Service-Via); the audit log records it.
	Via string
}

// KeyKind names what kind of credential the principal holds, as listings show it.
func (p *Principal) KeyKind() string {
	switch {
	case p.Session:
		return "session"
	case p.ReadOnly:
		return "read_only"
	case p.ProjectID != "":
		return "project"
	default:
		return "full"
	}
}

// Label is how the audit log names the actor.
func (p *Principal) Label() string {
	if p.Session {
		return "session:" + p.MemberID
	}
	return "key:" + p.KeyPrefix
}
