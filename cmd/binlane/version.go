package main

import (
	"fmt"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=..." (make
// build does, from git describe); otherwise the build info says it.
var version = "dev"

// versionString is what --version prints: the version, and the commit the
// binary was built from (go build stamps it from git), "+modified" when
// the work tree had changes.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return describeBuild(version, bi)
}

// describeBuild formats a version from the linker's value and the build
// info (nil when the binary has none).
func describeBuild(ldVersion string, bi *debug.BuildInfo) string {
	v := ldVersion
	if bi == nil {
		return v
	}
	if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version // go install module@version
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if modified {
			rev += "+modified"
		}
		v += " (commit " + rev
		if at != "" {
			v += ", " + at
		}
		v += ")"
	}
	if bi.GoVersion != "" {
		v += fmt.Sprintf(", built with %s", bi.GoVersion)
	}
	return v
}
