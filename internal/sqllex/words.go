package sqllex

import "strings"

// Item is a token in the form statement parsers compare: keywords
// upper-cased, identifiers unquoted, string literals reduced to a marker.
type Item struct {
	Text   string // upper-cased for bare words; "'" for a string literal
	Raw    string // as written; unquoted for a quoted identifier; "" for a string literal
	Quoted bool   // a `quoted identifier`: never a keyword
	Kind   Kind
}

// Items returns the first limit (0: all) tokens of a statement, read with
// NewDDL's rules in sql_mode m, as Items. Comments are dropped; the body of an
// executable comment is kept.
//
// Its tokens are the ones txn's statement classification was written
// against: a literal's introducer is a Word of its own before the literal
// (_utf8mb4'x' is _UTF8MB4 and '), and a digit-led token is split at its
// dots (db1.2t is not one token, nor is 1.5).
func Items(q string, m Mode, limit int) []Item {
	var out []Item
	l := NewDDL(q).In(m)
	for limit <= 0 || len(out) < limit {
		t := l.Next()
		if t.Kind == EOF {
			break
		}
		out = appendItems(out, q[t.Start:t.End], t.Kind)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func appendItems(out []Item, s string, k Kind) []Item {
	switch k {
	case Ident:
		name := unquote(s)
		return append(out, Item{Text: name, Raw: name, Quoted: true, Kind: Ident})
	case String, Hex:
		if q := strings.IndexAny(s, `'"`); q > 0 {
			out = appendWord(out, s[:q], Word) // the introducer
			s = s[q:]
		} else if q < 0 {
			return appendDotted(out, s, k) // 0x41, 0b01
		}
		return append(out, Item{Text: "'", Kind: String})
	case Number:
		return appendDotted(out, s, k)
	}
	return appendWord(out, s, k)
}

func appendWord(out []Item, s string, k Kind) []Item {
	if k == Punct {
		return append(out, Item{Text: s, Raw: s, Kind: k})
	}
	return append(out, Item{Text: strings.ToUpper(s), Raw: s, Kind: k})
}

// appendDotted appends a digit-led token's parts and the dots between
// them as tokens of their own.
func appendDotted(out []Item, s string, k Kind) []Item {
	for {
		i := strings.IndexByte(s, '.')
		if i < 0 {
			break
		}
		if i > 0 {
			out = appendWord(out, s[:i], k)
		}
		out = appendWord(out, ".", Punct)
		s = s[i+1:]
	}
	if s != "" {
		out = appendWord(out, s, k)
	}
	return out
}

// unquote returns the name of a `quoted identifier` or an ANSI_QUOTES
// "quoted identifier" (a doubled quote stands for one; an unterminated one
// runs to the end).
func unquote(s string) string {
	q := s[:1]
	if !strings.Contains(s[1:], q+q) {
		s = s[1:]
		if strings.HasSuffix(s, q) {
			s = s[:len(s)-1]
		}
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] == q[0] {
			if i+1 < len(s) && s[i+1] == q[0] {
				i++
			} else {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
