package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"

	"github.com/svcplatform/platform/controlplane/accounts"
)

// publicURL checks --public-url: an absolute http(s) URL with a host and
// no credentials, query or fragment; the trailing "/" is dropped. Empty
// stays empty (the API address is used).
func publicURL(o options) (string, error) {
	if o.publicURL == "" {
		return "", nil
	}
	u, err := url.Parse(o.publicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("--public-url %q: want the address people reach the control plane at, https://host[:port][/path] (no query or credentials)", o.publicURL)
	}
	return strings.TrimRight(o.publicURL, "/"), nil
}

// firstStartOnly are the flags that shape the first workspace and do
// nothing once it exists.
var firstStartOnly = []struct{ flag, what string }{
	{"plan", "the first workspace's plan"},
	{"owner-email", "the first owner's e-mail"},
	{"bootstrap-key", "the first owner key"},
}

// firstStartNotes says, on a data directory that already has its first
// workspace, that the first-start flags given do nothing there, and what
// does: each is logged and printed.
func firstStartNotes(out io.Writer, log *slog.Logger, o options, b accounts.Bootstrap) {
	if b.Created {
		return
	}
	for _, f := range firstStartOnly {
		if !o.set[f.flag] {
			continue
		}
		var v string
		for _, d := range o.defs() {
			if d.name == f.flag {
				v = *d.dst
			}
		}
		how := ""
		switch f.flag {
		case "plan":
			how = "; change a workspace's plan with: platform workspace plan WORKSPACE_ID PLAN"
			fmt.Fprintf(out, "platform: --plan %s does nothing here: this data directory already has its workspaces, which keep their plans%s\n", v, how)
			log.Warn("--plan does nothing on an existing data directory: workspaces keep their plans", "plan", v, "data", o.data)
			continue
		case "owner-email":
			how = "; invite people with POST /api/members"
		case "bootstrap-key":
			how = "; a lost owner key: platform owner-key reset"
			v = "(given)"
		}
		fmt.Fprintf(out, "platform: --%s %s does nothing here: it sets %s on an empty data directory only%s\n", f.flag, v, f.what, how)
		log.Info("a first-start flag does nothing on an existing data directory", "flag", f.flag, "data", o.data)
	}
}

// liveNotes says at start whether live ingest runs and, when not, why: a
// default port in use (the platform starts without it), turned off, or
// nginx with its RTMP module missing.
func liveNotes(out io.Writer, log *slog.Logger, cmd string, o options, skipped []skippedListener, ingestURL string, unavailable error) {
	if cmd == "edge" {
		return
	}
	for _, s := range skipped {
		var busy error = s.err
		if errors.Is(s.err, errOffWithRTMP) {
			fmt.Fprintf(out, "platform: live ingest over RTMPS off: it forwards to RTMP, which is off\n")
			log.Warn("live ingest over RTMPS off: RTMP is off", "addr", s.addr)
			continue
		}
		fmt.Fprintf(out, "platform: live ingest %s off: its default address %s is in use (%v); the platform runs without it; choose a free one with --%s (env %s) to turn it on\n",
			strings.ToUpper(s.what), s.addr, busy, s.flag, s.env)
		log.Warn("live ingest off: default port in use", "listener", s.what, "addr", s.addr, "err", busy, "flag", "--"+s.flag)
	}
	switch {
	case o.rtmpAddr == "":
		if len(skipped) == 0 {
			fmt.Fprintf(out, "platform: live ingest off (--rtmp-addr is empty)\n")
			log.Info("live ingest off: --rtmp-addr is empty")
		}
	case unavailable != nil:
		fmt.Fprintf(out, "platform: live ingest unavailable: %v (install the Debian packages nginx and libnginx-mod-rtmp); live channels answer 503\n", unavailable)
		log.Warn("live ingest unavailable", "err", unavailable)
	default:
		how := "default address"
		if o.set["rtmp-addr"] {
			how = "configured"
		}
		fmt.Fprintf(out, "platform: live ingest at %s (RTMP on %s, %s)\n", ingestURL, o.rtmpAddr, how)
		log.Info("live ingest on", "ingest", ingestURL, "rtmp", o.rtmpAddr, "rtmps", o.rtmpsAddr, "how", how)
	}
}
