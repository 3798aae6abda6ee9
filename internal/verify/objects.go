package verify

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
)

// ObjectKind is the kind of a schema object verify compares by definition.
type ObjectKind string

const (
	KindTable     ObjectKind = "table"
	KindView      ObjectKind = "view"
	KindSequence  ObjectKind = "sequence"
	KindProcedure ObjectKind = "procedure"
	KindFunction  ObjectKind = "function"
	KindEvent     ObjectKind = "event"
	KindTrigger   ObjectKind = "trigger"
)

// ObjectStatus is the outcome for one object.
type ObjectStatus string

const (
	ObjectEqual        ObjectStatus = "equal"
	ObjectDifferent    ObjectStatus = "different"
	ObjectMissing      ObjectStatus = "missing-on-target"
	ObjectOnlyOnTarget ObjectStatus = "only-on-target"
	// ObjectDeferred: a trigger or event the target does not have yet. A
	// replica must not run them; the cut-over's hand-over creates them.
	ObjectDeferred ObjectStatus = "deferred-to-cutover"
	ObjectError    ObjectStatus = "error" // its definition could not be read
)

// ObjectReport is the result for one object.
type ObjectReport struct {
	Kind   ObjectKind   `json:"kind"`
	Schema string       `json:"schema"`
	Name   string       `json:"name"`
	Status ObjectStatus `json:"status"`
	// Line is the first line (from 1) of the normalized definitions that
	// differs, and Source and Target that line on each side, cut around the
	// first differing character (ObjectDifferent).
	Line   int    `json:"line,omitempty"`
	Source string `json:"source,omitempty"`
	Target string `json:"target,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Equal reports whether the object needs nothing: the same on both sides,
// or a trigger or event the cut-over will create.
func (o ObjectReport) Equal() bool { return o.Status == ObjectEqual || o.Status == ObjectDeferred }

// Label is how reports name the object: "view shop.v".
func (o ObjectReport) Label() string { return string(o.Kind) + " " + o.Schema + "." + o.Name }

// objectDef is one object as read from a server: its definition as the
// server shows it, with the session settings it runs in, or the reason it
// could not be read.
type objectDef struct {
	Kind         ObjectKind
	Schema, Name string
	// Order is a trigger's ACTION_ORDER among those of its table, timing
	// and event, which SHOW CREATE TRIGGER does not show.
	Order string
	Def   string
	Err   string
}

func (d objectDef) key() string { return string(d.Kind) + "\x00" + d.Schema + "\x00" + d.Name }

// compareObjects pairs the objects of both sides and compares their
// normalized definitions. Tables on one side only are left out: the row
// comparison reports them. Before the hand-over (handedOver false) a
// trigger or event the target lacks is deferred, and an event the target
// holds DISABLE ON SLAVE (as a replica creates it) equals one the source
// has ENABLE; after it, both must be exactly the source's.
// With anyDefiner, definers are not compared (a copy made with
// --definer=current created the target's objects as binlane's account).
func compareObjects(src, tgt []objectDef, handedOver, anyDefiner bool) []ObjectReport {
	srcBy, tgtBy := map[string]objectDef{}, map[string]objectDef{}
	var keys []objectDef
	for _, d := range src {
		srcBy[d.key()] = d
		keys = append(keys, d)
	}
	for _, d := range tgt {
		tgtBy[d.key()] = d
		if _, ok := srcBy[d.key()]; !ok {
			keys = append(keys, d)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Schema != b.Schema {
			return a.Schema < b.Schema
		}
		if a.Kind != b.Kind {
			return kindOrder(a.Kind) < kindOrder(b.Kind)
		}
		return a.Name < b.Name
	})
	var out []ObjectReport
	for _, k := range keys {
		s, inSrc := srcBy[k.key()]
		t, inTgt := tgtBy[k.key()]
		if k.Kind == KindTable && (!inSrc || !inTgt) {
			continue
		}
		out = append(out, compareObject(k, s, t, inSrc, inTgt, handedOver, anyDefiner))
	}
	return out
}

func compareObject(k, s, t objectDef, inSrc, inTgt, handedOver, anyDefiner bool) ObjectReport {
	r := ObjectReport{Kind: k.Kind, Schema: k.Schema, Name: k.Name}
	deferrable := k.Kind == KindTrigger || k.Kind == KindEvent
	switch {
	case inSrc && s.Err != "":
		r.Status, r.Error = ObjectError, "source: "+s.Err
	case inTgt && t.Err != "":
		r.Status, r.Error = ObjectError, "target: "+t.Err
	case !inTgt && deferrable && !handedOver:
		r.Status = ObjectDeferred
	case !inTgt:
		r.Status = ObjectMissing
	case !inSrc:
		r.Status = ObjectOnlyOnTarget
	default:
		a, b := normalizeDefinition(s), normalizeDefinition(t)
		if anyDefiner {
			a, b = withoutDefiner(a), withoutDefiner(b)
		}
		if k.Kind == KindEvent && !handedOver {
			b = replicaEventStatus(a, b)
		}
		if a == b {
			r.Status = ObjectEqual
			break
		}
		r.Status = ObjectDifferent
		r.Line, r.Source, r.Target = firstDifference(a, b)
	}
	return r
}

// kindOrder lists a schema's objects as a DBA reads them: the tables
// first, then what is built on them.
func kindOrder(k ObjectKind) int {
	for i, o := range []ObjectKind{KindTable, KindSequence, KindView, KindTrigger, KindFunction, KindProcedure, KindEvent} {
		if o == k {
			return i
		}
	}
	return 99
}

// autoIncrementOption is the table's next AUTO_INCREMENT value: a counter
// the two servers legitimately disagree on (a replica's moves only with
// the rows it applies, and a restart or a rolled-back insert moves either).
var autoIncrementOption = regexp.MustCompile(` AUTO_INCREMENT=[0-9]+`)

// tableEngine is a table's storage engine, in its options and in each
// partition's: binlane requires a transactional engine on the target
// (README), so a source's MyISAM or Aria table is InnoDB there.
var tableEngine = regexp.MustCompile(`(?m)(^\) ENGINE=[A-Za-z0-9_]+| ENGINE = [A-Za-z0-9_]+)`)

// normalizeDefinition is a definition without what legitimately differs
// between two servers holding the same object: a table's AUTO_INCREMENT
// counter and engine, and the spelling of its definer (quoting, and the
// case of the host name, which MariaDB matches without it).
func normalizeDefinition(d objectDef) string {
	s := d.Def
	if d.Kind == KindTable {
		s = autoIncrementOption.ReplaceAllString(s, "")
		s = tableEngine.ReplaceAllStringFunc(s, func(m string) string {
			if strings.HasPrefix(m, ")") {
				return ")"
			}
			return ""
		})
	}
	if start, end, user, host, ok := schema.DefinerAt(s); ok {
		s = s[:start] + "DEFINER=" + sqlquote.Account(user, strings.ToLower(host)) + s[end:]
	}
	return s
}

// withoutDefiner is a normalized definition with its definer left out.
func withoutDefiner(s string) string {
	if start, end, _, _, ok := schema.DefinerAt(s); ok {
		return s[:start] + "DEFINER=*" + s[end:]
	}
	return s
}

// replicaEventStatus returns the target's event definition with the
// source's status when the target's is DISABLE ON SLAVE (MySQL 8.4: ON
// REPLICA) and the source's ENABLE: what a replica holds for an enabled
// event until it takes over. The status is read after the event's name
// (schema.EventStatusAt), so a name cannot fake it.
func replicaEventStatus(src, tgt string) string {
	ss, se, sok := schema.EventStatusAt(src)
	ts, te, tok := schema.EventStatusAt(tgt)
	if !sok || !tok || src[ss:se] != "ENABLE" || tgt[ts:te] != "DISABLE ON SLAVE" && tgt[ts:te] != "DISABLE ON REPLICA" {
		return tgt
	}
	return tgt[:ts] + "ENABLE" + tgt[te:]
}

// excerptRunes bounds a differing line in a report: this many characters
// each side of the first difference.
const excerptRunes = 40

// firstDifference returns the first differing line of a and b (from 1),
// each cut to a window around the first differing character; a missing
// line is empty.
func firstDifference(a, b string) (int, string, string) {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x == y {
			continue
		}
		at := 0
		for at < len(x) && at < len(y) && x[at] == y[at] {
			at++
		}
		return i + 1, excerpt(x, at), excerpt(y, at)
	}
	return 0, "", ""
}

// excerpt cuts s to excerptRunes characters each side of byte offset at,
// marking what was cut with "...".
func excerpt(s string, at int) string {
	for at > 0 && at < len(s) && !utf8.RuneStart(s[at]) {
		at--
	}
	before, after := []rune(s[:min(at, len(s))]), []rune(s[min(at, len(s)):])
	pre, post := "", ""
	if len(before) > excerptRunes {
		before, pre = before[len(before)-excerptRunes:], "..."
	}
	if len(after) > excerptRunes {
		after, post = after[:excerptRunes], "..."
	}
	return pre + string(before) + string(after) + post
}

// describeSession is the part of a definition that SHOW CREATE gives
// beside the statement: the settings the object's body was parsed in (a
// change of sql_mode or character set changes what the body does).
func describeSession(create string, settings [][2]string) string {
	var b strings.Builder
	b.WriteString(create)
	for _, s := range settings {
		if s[1] != "" {
			fmt.Fprintf(&b, "\n-- %s: %s", s[0], s[1])
		}
	}
	return b.String()
}
