package binlog

import (
	"strconv"
	"strings"
)

// serverVersion is a server's version as its format description states it.
type serverVersion struct{ major, minor, patch int }

// parseServerVersion reads "10.11.19-MariaDB-0+deb12u1-log" or "8.0.36"
// (a "5.5.5-" prefix some MariaDB handshakes carry is dropped).
func parseServerVersion(s string) (serverVersion, bool) {
	s = strings.TrimPrefix(s, "5.5.5-")
	var v serverVersion
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 3 {
		return v, false
	}
	end := strings.IndexFunc(parts[2], func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		parts[2] = parts[2][:end]
	}
	var err1, err2, err3 error
	v.major, err1 = strconv.Atoi(parts[0])
	v.minor, err2 = strconv.Atoi(parts[1])
	v.patch, err3 = strconv.Atoi(parts[2])
	return v, err1 == nil && err2 == nil && err3 == nil
}

func (v serverVersion) atLeast(major, minor, patch int) bool {
	if v.major != major {
		return v.major > major
	}
	if v.minor != minor {
		return v.minor > minor
	}
	return v.patch >= patch
}

// mariaWritesExplicitDefaults reports whether a MariaDB server of this
// version records explicit_defaults_for_timestamp in a query event's flags2
// (MDEV-29322, fixed in 10.3.37, 10.4.27, 10.5.18, 10.6.11, 10.7.7, 10.8.6,
// 10.9.4 and 10.10.2). Older servers leave the bit clear whatever the
// session had, so it says nothing there: a replica then keeps its own
// setting, as MariaDB's own replica does.
func mariaWritesExplicitDefaults(version string) bool {
	v, ok := parseServerVersion(version)
	if !ok {
		return false
	}
	fixed := map[int]int{3: 37, 4: 27, 5: 18, 6: 11, 7: 7, 8: 6, 9: 4, 10: 2}
	switch {
	case v.major > 10 || v.major == 10 && v.minor >= 11:
		return true
	case v.major == 10:
		p, ok := fixed[v.minor]
		return ok && v.patch >= p
	}
	return false
}

// checksumAware reports whether a server of this version ends its format
// description with a checksum-algorithm byte: MySQL from 5.6.1, MariaDB
// from 5.3 (mariadb-binlog's checksum_version_split). Before that the byte
// does not exist, and reading one would eat the last post-header length.
func checksumAware(version string) bool {
	v, ok := parseServerVersion(version)
	if !ok {
		return true // not a version string we know: assume a recent server
	}
	if strings.Contains(version, "MariaDB") {
		return v.atLeast(5, 3, 0)
	}
	return v.atLeast(5, 6, 1)
}
