package signin

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Routes is the area's rows of the route table. A pool's project is known
// once it is loaded, so the service checks the permission table again with
// it (a key of another project gets 403). The end-user routes under
// /api/auth/{pool} are public: a browser on one of the pool's origins, an
// app's server or a mobile app calls them, with the user's tokens.
func Routes(h Handlers) []api.Route {
	const G, P, A, D, O = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodOptions
	return []api.Route{
		// Management.
		{Method: P, Path: "/api/projects/{id}/auth-pools", Op: OpWrite, ProjectParam: "id", Handler: h.CreatePool, Status: 201,
			Summary: "Create a sign-in pool {name, settings?}", Request: CreateRequest{}, Response: PoolAnswer{}},
		{Method: G, Path: "/api/projects/{id}/auth-pools", Op: OpRead, ProjectParam: "id", Handler: h.ListPools,
			Summary: "A project's sign-in pools", Response: PoolList{}},
		{Method: G, Path: "/api/auth-pools/{id}", Op: OpRead, Handler: h.GetPool,
			Summary: "A sign-in pool: settings, user count and cap, issuer, endpoints and public keys", Response: PoolAnswer{}},
		{Method: A, Path: "/api/auth-pools/{id}", Op: OpWrite, Handler: h.UpdatePool,
			Summary: "Rename a pool or merge settings over its saved ones", Request: UpdateRequest{}, Response: PoolAnswer{}},
		{Method: D, Path: "/api/auth-pools/{id}", Op: OpWrite, Handler: h.DeletePool,
			Summary: "Delete a pool with its users, sessions and keys", Response: api.Deleted{}},
		{Method: P, Path: "/api/auth-pools/{id}/keys/rotate", Op: OpWrite, Handler: h.RotateKeys,
			Summary: "Rotate the signing keys now {revokePrevious?}", Request: RotateRequest{}, Response: PoolAnswer{}},
		{Method: G, Path: "/api/auth-pools/{id}/users", Op: OpUsersRead, Handler: h.ListUsers,
			Summary: "A page of the pool's users, oldest first (?limit=1-200&cursor=&email=<part of the address>)", Response: UserPage{}},
		{Method: G, Path: "/api/auth-pools/{id}/users/{userId}", Op: OpUsersRead, Handler: h.GetUser,
			Summary: "One user of the pool", Response: UserAnswer{}},
		{Method: A, Path: "/api/auth-pools/{id}/users/{userId}", Op: OpWrite, Handler: h.PatchUser,
			Summary: "Disable or enable a user {disabled}, or end their lockout {unlock: true}", Request: UserPatch{}, Response: UserAnswer{}},
		{Method: D, Path: "/api/auth-pools/{id}/users/{userId}", Op: OpWrite, Handler: h.DeleteUser,
			Summary: "Delete a user with their sessions", Response: api.Deleted{}},

		// End users.
		{Method: P, Path: "/api/auth/{pool}/signup", Public: true, Handler: h.SignUp, Status: 201, MaxBody: MaxEndUserBody,
			Summary: "Sign up {email, password}: a session, or verificationRequired when the pool wants a confirmed address", Request: Credentials{}, Response: SignUpAnswer{}},
		{Method: P, Path: "/api/auth/{pool}/signin", Public: true, Handler: h.SignIn, MaxBody: MaxEndUserBody,
			Summary: "Sign in {email, password}: an access token and a refresh token", Request: Credentials{}, Response: Session{}},
		{Method: P, Path: "/api/auth/{pool}/token/refresh", Public: true, Handler: h.Refresh, MaxBody: MaxEndUserBody,
			Summary: "Trade a refresh token for a new session (each refresh token works once)", Request: RefreshRequest{}, Response: Session{}},
		{Method: P, Path: "/api/auth/{pool}/signout", Public: true, Handler: h.SignOut, MaxBody: MaxEndUserBody,
			Summary: "End the session of the access token (Authorization: Bearer) or of refreshToken; scope global ends all", Request: SignOutRequest{}, Response: SignedOut{}},
		{Method: G, Path: "/api/auth/{pool}/user", Public: true, Handler: h.User,
			Summary: "The signed-in user (Authorization: Bearer <accessToken>)", Response: UserAnswer{}},
		{Method: P, Path: "/api/auth/{pool}/verify", Public: true, Handler: h.Verify, MaxBody: MaxEndUserBody,
			Summary: "Confirm an e-mail address with the mailed token {token}", Request: TokenRequest{}, Response: UserAnswer{}},
		{Method: P, Path: "/api/auth/{pool}/verify/send", Public: true, Handler: h.SendVerification, Status: 202, MaxBody: MaxEndUserBody,
			Summary: "Mail a new verification token {email}; the same answer whether or not the address has an account", Request: EmailRequest{}, Response: Sent{}},
		{Method: P, Path: "/api/auth/{pool}/recover", Public: true, Handler: h.Recover, Status: 202, MaxBody: MaxEndUserBody,
			Summary: "Mail a password-reset token {email}; the same answer whether or not the address has an account", Request: EmailRequest{}, Response: Sent{}},
		{Method: P, Path: "/api/auth/{pool}/recover/confirm", Public: true, Handler: h.ResetPassword, MaxBody: MaxEndUserBody,
			Summary: "Set a new password with the mailed reset token {token, password}; ends every session", Request: ResetRequest{}, Response: UserAnswer{}},
		{Method: G, Path: "/api/auth/{pool}/.well-known/jwks.json", Public: true, Handler: h.JWKS,
			Summary: "The pool's public signing keys (JWKS) to verify access tokens offline", Response: JWKS{}},
		{Method: O, Path: "/api/auth/{pool}/{path...}", Public: true, Handler: h.Preflight, Status: 204,
			Summary: "CORS preflight of the end-user endpoints (the pool's allowed origins only)"},
	}
}
