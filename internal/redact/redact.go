// Package redact hides secrets in text binlane prints or stores.
// (Placeholder until the full implementation lands.)
package redact

import "regexp"

var identified = regexp.MustCompile(`(?i)((?:IDENTIFIED\s+(?:BY|VIA|WITH)[^']*|PASSWORD\s*(?:\(|=\s*|FOR\s+\S+\s*=\s*)?[^']*)')((?:[^'\\]|\\.|'')*)'`)

// Statement hides passwords in a statement.
func Statement(q string) string { return identified.ReplaceAllString(q, "$1<redacted>'") }

// Text hides passwords in free text.
func Text(s string) string { return Statement(s) }
