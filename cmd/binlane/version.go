package main

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
)

// pseudoVersion is the version Go makes up for an untagged commit
// (v0.0.0-20261125180521-a2859cdf32b4): the commit says it better.
var pseudoVersion = regexp.MustCompile(`-(0\.)?\d{14}-[0-9a-f]{12}$`)

// version and commit are set at build time with -ldflags "-X
// main.version=... -X main.commit=..." (make build does: the tag, and the
// commit for builds where go cannot stamp it, such as from a git
// worktree); otherwise the build info says them.
var version, commit = "dev", ""

// versionString is what --version prints: the version, and the commit the
// binary was built from (go build stamps it from git), "+modified" when
// the work tree had changes.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	if bi != nil && commit != "" && !slices.ContainsFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "vcs.revision" }) {
		rev, modified := strings.CutSuffix(commit, "+modified")
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: rev},
			debug.BuildSetting{Key: "vcs.modified", Value: fmt.Sprint(modified)})
	}
	return describeBuild(version, bi)
}

// describeBuild formats a version from the linker's value and the build
// info (nil when the binary has none).
func describeBuild(ldVersion string, bi *debug.BuildInfo) string {
	v := ldVersion
	if bi == nil {
		return v
	}
	if mv := strings.TrimSuffix(bi.Main.Version, "+dirty"); v == "dev" && mv != "" && mv != "(devel)" && !pseudoVersion.MatchString(mv) {
		v = mv // a tagged release: go install module@version, or a build at a tag
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
