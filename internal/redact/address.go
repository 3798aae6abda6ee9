package redact

import (
	"strings"

	"github.com/binlane/binlane/internal/sqllex"
)

// addresses hides the password of server addresses in s:
// scheme://user:pass@host… URLs and go-sql-driver DSNs
// user:pass@tcp(host:port)/db (also tcp6 and unix). An address ends at
// white space or a quote; the user part of a DSN starts after one.
func addresses(s string) string {
	if strings.IndexByte(s, '@') < 0 {
		return s
	}
	r := rewriter{s: s}
	for i := 0; i < len(s); {
		j := strings.IndexAny(s[i:], ":@")
		if j < 0 {
			break
		}
		i += j
		switch {
		case strings.HasPrefix(s[i:], "://"):
			i = r.urlUserinfo(i + 3)
		case s[i] == '@' && dsnNet(s[i+1:]):
			r.dsnPassword(i)
			i++
		default:
			i++
		}
	}
	return r.result()
}

// urlUserinfo hides the password of a URL whose authority starts at
// s[from] and returns where scanning goes on. The userinfo ends at the
// address's last '@': a password with an unescaped '@' is still hidden.
func (r *rewriter) urlUserinfo(from int) int {
	s := r.s
	end := addrEnd(s, from)
	at := strings.LastIndexByte(s[from:end], '@')
	if at < 0 {
		return from
	}
	at += from
	if colon := strings.IndexByte(s[from:at], ':'); colon >= 0 {
		r.hide(sqllex.Token{Start: from + colon + 1, End: at}, addrMarker)
	}
	return at + 1
}

// dsnPassword hides the password of a DSN whose '@' is at s[at]: the
// user part runs back to white space or a quote, and the password is what
// follows its first ':' (a user name has no ':').
func (r *rewriter) dsnPassword(at int) {
	s := r.s
	start := at
	for start > 0 && !isAddrEnd(s[start-1]) {
		start--
	}
	if k := strings.Index(s[start:at], "://"); k >= 0 {
		return // a URL: done by urlUserinfo
	}
	if colon := strings.IndexByte(s[start:at], ':'); colon >= 0 {
		r.hide(sqllex.Token{Start: start + colon + 1, End: at}, addrMarker)
	}
}

// dsnNet reports whether s (after an '@') starts a go-sql-driver network
// address.
func dsnNet(s string) bool {
	return strings.HasPrefix(s, "tcp(") || strings.HasPrefix(s, "tcp6(") || strings.HasPrefix(s, "unix(")
}

func addrEnd(s string, i int) int {
	for i < len(s) && !isAddrEnd(s[i]) {
		i++
	}
	return i
}

func isAddrEnd(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || isQuote(c)
}
