package main

import "runtime/debug"

// platformVersion is the binary's version: its module version and, when
// built from a checkout, the commit (with "+dirty" for local changes).
func platformVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " " + rev[:min(len(rev), 12)] + dirty
	}
	return v + " " + bi.GoVersion
}
