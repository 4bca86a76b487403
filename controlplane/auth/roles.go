// Package auth holds workspaces, members and their roles, API keys, owner
// sessions and the one permission table every handler consults.
package auth

import "fmt"

// Role is a member's role in a workspace. Roles are ordered: each includes
// what the ones below it may do.
type Role int

// The roles, lowest first.
const (
	RoleNone Role = iota
	Viewer
	Developer
	Admin
	Owner
)

var roleNames = [...]string{"", "viewer", "developer", "admin", "owner"}

func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return ""
	}
	return roleNames[r]
}

// ParseRole reads a role name.
func ParseRole(s string) (Role, error) {
	for i, n := range roleNames {
		if n != "" && n == s {
			return Role(i), nil
		}
	}
	return RoleNone, fmt.Errorf("unknown role %q (want viewer, developer, admin or owner)", s)
}

// MarshalText renders the role name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses a role name.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
