package accounts

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

// Sign-up: who may make themselves a person and a first workspace without
// an invitation. Closed (the default) allows nobody; open allows anyone;
// domains allows addresses of the listed domains. A signed-up workspace
// can do nothing but verify its owner's e-mail until that is done (the
// verification mail is sent at sign-up).
const (
	// SignUpsPerHour bounds the sign-ups one client address may make an hour.
	SignUpsPerHour = 10
	// maxSignUpDomains bounds the domains a policy lists.
	maxSignUpDomains = 100
)

// SignUpPolicy is the operator's sign-up setting. Its text form is
// "closed", "open" or "domains:example.com,example.org".
type SignUpPolicy struct {
	// Open allows sign-ups.
	Open bool
	// Domains, when not empty, are the only e-mail domains that may sign up.
	Domains []string
}

var (
	_ encoding.TextMarshaler   = SignUpPolicy{}
	_ encoding.TextUnmarshaler = (*SignUpPolicy)(nil)
)

// ParseSignUpPolicy reads the policy's text form.
func ParseSignUpPolicy(s string) (SignUpPolicy, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "closed":
		return SignUpPolicy{}, nil
	case s == "open":
		return SignUpPolicy{Open: true}, nil
	case strings.HasPrefix(s, "domains:"):
		var p SignUpPolicy
		for _, d := range strings.Split(strings.TrimPrefix(s, "domains:"), ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			if d == "" || strings.ContainsAny(d, "@ /") || !strings.Contains(d, ".") {
				return SignUpPolicy{}, fmt.Errorf("accounts: sign-up domain %q is not a domain (domains:example.com,example.org)", d)
			}
			p.Domains = append(p.Domains, d)
		}
		if len(p.Domains) > maxSignUpDomains {
			return SignUpPolicy{}, fmt.Errorf("accounts: at most %d sign-up domains", maxSignUpDomains)
		}
		p.Open = true
		return p, nil
	}
	return SignUpPolicy{}, fmt.Errorf("accounts: sign-up must be closed, open or domains:example.com,example.org, not %q", s)
}

// String is the policy's text form.
func (p SignUpPolicy) String() string {
	switch {
	case !p.Open:
		return "closed"
	case len(p.Domains) > 0:
		return "domains:" + strings.Join(p.Domains, ",")
	}
	return "open"
}

// MarshalText implements encoding.TextMarshaler.
func (p SignUpPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *SignUpPolicy) UnmarshalText(b []byte) error {
	v, err := ParseSignUpPolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// allows tells whether an address of domain may sign up.
func (p SignUpPolicy) allows(domain string) bool {
	if !p.Open {
		return false
	}
	if len(p.Domains) == 0 {
		return true
	}
	for _, d := range p.Domains {
		if d == domain {
			return true
		}
	}
	return false
}

// SignUpRequest is the body of POST /api/signup.
type SignUpRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Name     string `json:"name,omitempty"`
	// Workspace names the first workspace ("<name>'s workspace" when empty).
	Workspace string `json:"workspace,omitempty"`
}

// SignedUp is the answer of a sign-up. It is the same whether the e-mail
// was new or already had an account, so that sign-up tells nobody which
// addresses have one: what happened is in the mail sent to the address.
type SignedUp struct {
	Email string `json:"email"`
	Note  string `json:"note"`
}

// SignUp makes a person and their first workspace, on the default plan,
// with them as owner, and mails them an e-mail verification token: the
// workspace can do nothing else until it is redeemed. An e-mail that
// already has an account gets a notice by mail instead and nothing is
// made; the answer is the same either way. It is throttled per client
// address.
func (s *Service) SignUp(ctx context.Context, req SignUpRequest, clientAddr string) (SignedUp, error) {
	if !s.signUp.Open {
		return SignedUp{}, api.Forbidden("signup_closed", "sign-up is closed on this platform: ask a workspace admin for an invitation")
	}
	email, err := normalizeEmail(req.Email)
	if err != nil {
		return SignedUp{}, err
	}
	domain := email[strings.LastIndexByte(email, '@')+1:]
	if !s.signUp.allows(domain) {
		return SignedUp{}, api.Forbidden("signup_domain", "sign-up is open only to addresses at %s; ask a workspace admin for an invitation",
			strings.Join(s.signUp.Domains, ", "))
	}
	if err := validPassword(req.Password); err != nil {
		return SignedUp{}, err
	}
	name := strings.TrimSpace(req.Name)
	if len(name) > 100 {
		return SignedUp{}, api.Invalid("name is at most 100 characters")
	}
	wsName := req.Workspace
	if strings.TrimSpace(wsName) == "" {
		wsName = email[:strings.LastIndexByte(email, '@')] + "'s workspace"
		if name != "" {
			wsName = name + "'s workspace"
		}
	}
	if wsName, err = workspaceName(wsName); err != nil {
		return SignedUp{}, err
	}
	now := s.clock.Now()
	res, wait := s.signUps.reserve(now, slot{key: "addr:" + clientAddr, rule: rule{SignUpsPerHour, time.Hour}})
	if res == nil {
		secs := int(wait.Seconds()) + 1
		e := api.E(api.KindRateLimited, "too_many_signups", "too many sign-ups from your address; try again in %d seconds", secs)
		e.RetryAfter = secs
		return SignedUp{}, e
	}
	hash, err := passhash.HashWith(s.params, req.Password)
	if err != nil {
		return SignedUp{}, err
	}
	person := Person{ID: store.NewID("per"), Email: email, Name: name, CreatedAt: now, passwordHash: hash}
	w := Workspace{ID: store.NewID("ws"), Name: wsName, Plan: s.defaultPlan, CreatedAt: now, VerificationRequired: true}
	owner := MemberRecord{WorkspaceID: w.ID, PersonID: person.ID,
		Member: Member{ID: store.NewID("mem"), Email: email, Name: name, Role: auth.Owner, Status: "active", HasPassword: true, CreatedAt: now}}
	out := SignedUp{Email: email, Note: "A message was mailed to " + email + ": it says what to do next. " +
		"A new account signs in with POST /api/session and can do nothing but verify its e-mail until the mailed token is redeemed (POST /api/account/email/verify)."}
	err = s.store.CreateWorkspace(ctx, w, &person, owner, func(int) error { return nil },
		audit.Event{Workspace: w.ID, Actor: &auth.Principal{WorkspaceID: w.ID, MemberID: owner.ID, Session: true}, Action: "workspace.signup",
			Category: audit.CategoryAccount, TargetType: "workspace", TargetID: w.ID, Summary: email + " signed up"})
	var taken *api.Error
	if errors.As(err, &taken) && taken.Code == "account_exists" {
		// Tell the address's owner, not the caller.
		s.mailSignUpTaken(ctx, email)
		return out, nil
	}
	if err != nil {
		return SignedUp{}, err
	}
	if _, err := s.RequestEmailVerification(ctx, &auth.Principal{WorkspaceID: w.ID, MemberID: owner.ID, Role: auth.Owner}); err != nil {
		s.log.Warn("accounts: sign-up verification mail not sent", "workspace", w.ID, "err", err)
	}
	return out, nil
}

// mailSignUpTaken tells the owner of email that someone tried to sign up
// with it.
func (s *Service) mailSignUpTaken(ctx context.Context, email string) {
	s.mu.Lock()
	mailer := s.mailer
	s.mu.Unlock()
	if mailer == nil {
		return
	}
	msg := Message{To: email, Subject: "Someone tried to sign up with your address",
		Body: "This address already has an account.\r\n" +
			"Someone (perhaps you) tried to sign up with it: nothing was created.\r\n\r\n" +
			"Sign in with POST /api/session instead.\r\nIf it was not you, ignore this message.\r\n"}
	if err := mailer.Send(ctx, msg); err != nil {
		s.log.Warn("accounts: sign-up notice not sent", "err", err)
	}
}
