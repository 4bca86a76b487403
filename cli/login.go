package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// DefaultAPI is the API address login offers: a control plane started
// with its defaults on this machine.
const DefaultAPI = "http://127.0.0.1:7070"

func runLogin(ctx context.Context, e *Env, args []string) error {
	fs := e.flags("login")
	apiFlag := fs.String("api", "", "the API address (default: PLATFORM_API_URL, else asked; "+DefaultAPI+" when left empty)")
	keyFlag := fs.String("key", "", "the API key (default: PLATFORM_API_KEY, else asked without echo)")
	device := fs.Bool("device", false, "log in without typing a key: show a code a signed-in member approves")
	approve := fs.String("approve", "", "approve another machine's device login CODE with the key stored here")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *device && *keyFlag != "" {
		return usagef("--device and --key exclude each other")
	}
	if *approve != "" {
		if *device || *keyFlag != "" {
			return usagef("--approve stands alone: it uses the key stored here")
		}
		return e.approveDevice(ctx, *approve)
	}
	base := first(*apiFlag, e.firstEnv(envAPI))
	if base == "" {
		answer, err := e.prompt("API address ["+DefaultAPI+"]: ", false)
		if err != nil {
			return err
		}
		base = first(answer, DefaultAPI)
	}
	key := first(*keyFlag, e.firstEnv(envKey))
	if *device {
		var err error
		if key, err = e.deviceLogin(ctx, base); err != nil {
			return err
		}
	}
	if key == "" {
		answer, err := e.prompt("API key: ", true)
		if err != nil {
			return err
		}
		if key = answer; key == "" {
			return errors.New("no key given: make one in the dashboard (API keys) or with POST /api/keys, then run platform login again")
		}
	}
	c, err := e.newClient(base, key)
	if err != nil {
		return err
	}
	who, err := c.Workspace(ctx)
	if err != nil {
		return fmt.Errorf("the key was not accepted, nothing was stored: %s", explain(err))
	}
	path, err := e.saveCredentials(Credentials{API: c.BaseURL, Key: key})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "Logged in to workspace %s (%s) as %s at %s.\nThe key is stored in %s (readable by you only).\n",
		who.Workspace.Name, who.Workspace.ID, who.You.Role, c.BaseURL, path)
	if who.You.ProjectID != "" {
		fmt.Fprintf(e.Stdout, "Note: this key is limited to project %s: it can manage that project's variables and deployments, but pushing a folder needs a workspace key.\n", who.You.ProjectID)
	}
	return nil
}

func runLogout(_ context.Context, e *Env, args []string) error {
	if _, err := parse(e.flags("logout"), args, 0); err != nil {
		return err
	}
	p, err := e.credentialsPath()
	if err != nil {
		return err
	}
	switch err := os.Remove(p); {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintln(e.Stdout, "Not logged in: nothing to forget.")
	case err != nil:
		return err
	default:
		fmt.Fprintf(e.Stdout, "Removed %s. The key itself still works until it is revoked in the dashboard.\n", p)
	}
	return nil
}

// deviceLogin asks for a code pair, shows the user code and waits until a
// member approves it; it returns the key made for that member.
func (e *Env) deviceLogin(ctx context.Context, base string) (string, error) {
	c, err := e.newClient(base, "")
	if err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	name := "platform CLI"
	if host != "" {
		name += " on " + host
	}
	dc, err := c.StartDeviceLogin(ctx, name)
	if err != nil {
		return "", fmt.Errorf("could not start a device login: %s", explain(err))
	}
	fmt.Fprintf(e.Stderr, "To log in, approve the code %s within %d minutes, as a member of the workspace:\n"+
		"  in the dashboard: %s%s\n"+
		"  or from a machine already logged in: platform login --approve %s\n"+
		"  or with the API: curl -X POST -H \"Authorization: Bearer $KEY\" -d '{\"userCode\":\"%s\"}' %s/api/device/approve\n"+
		"Waiting for the approval ...\n", dc.UserCode, dc.ExpiresIn/60, c.BaseURL, dc.VerificationURI, dc.UserCode, dc.UserCode, c.BaseURL)
	key, err := c.AwaitDeviceLogin(ctx, dc)
	if err != nil {
		return "", fmt.Errorf("the device login did not complete: %s", explain(err))
	}
	return key, nil
}

// approveDevice approves another machine's device login with the stored
// key.
func (e *Env) approveDevice(ctx context.Context, code string) error {
	c, err := e.api()
	if err != nil {
		return err
	}
	if err := c.ApproveDeviceLogin(ctx, code); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "Approved %s: the waiting machine gets a key of yours (revoke it like any key).\n", code)
	return nil
}

// first returns the first non-empty string.
func first(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
