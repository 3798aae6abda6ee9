package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlParser is the koanf parser of the file. It reads yaml.v3 nodes
// rather than decoding into a map (as koanf's own YAML parser does) for
// three reasons: errors must name the line, which only nodes know; a value
// must reach its flag as the text written (stream: 0123 is the string
// "0123", not the number 123, and a duration or an address is never
// reformatted); and a list option repeated on several lines (the old
// format's way to write a list) must add up instead of failing as a
// duplicate key.
type yamlParser struct {
	path  string
	l     *loader
	lines map[string]int // option → line of its (first) key
}

// Unmarshal returns the file's options: a flag name → its checked text,
// or the items of a list.
func (p *yamlParser) Unmarshal(b []byte) (map[string]any, error) {
	m := map[string]any{}
	p.lines = map[string]int{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return m, nil // empty, or comments only
	case err != nil:
		if err := p.oldFormat(b); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s:%d: a second YAML document: put every option in one", p.path, more.Line)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		if err := p.oldFormat(b); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s:%d: want one \"name: value\" per line", p.path, root.Line)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		kn, vn := root.Content[i], root.Content[i+1]
		name := kn.Value
		fl := p.l.fs.Lookup(name)
		if kn.Kind != yaml.ScalarNode || fl == nil || !p.l.settable(name) {
			if kn.Kind == yaml.ScalarNode && name != p.l.o.ConfigFlag && p.l.known(name) {
				continue // another command's option: the same file serves it
			}
			return nil, p.unknown(kn)
		}
		v, err := p.value(fl.Name, vn)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", p.path, vn.Line, name, err)
		}
		if prev, dup := m[name]; dup {
			prevList, wasList := prev.([]string)
			list, isList := v.([]string)
			if !wasList || !isList {
				return nil, fmt.Errorf("%s:%d: %s is given twice (first on line %d)", p.path, kn.Line, name, p.lines[name])
			}
			m[name] = append(prevList, list...)
			continue
		}
		m[name] = v
		p.lines[name] = kn.Line
	}
	return m, nil
}

// value checks one option's value node against its flag.
func (p *yamlParser) value(name string, n *yaml.Node) (any, error) {
	fl := p.l.fs.Lookup(name)
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return nil, errors.New("no value (leave the line out for the default)")
		}
		return check(fl, n.Value)
	case yaml.SequenceNode:
		items := make([]string, len(n.Content))
		for i, c := range n.Content {
			if c.Kind == yaml.AliasNode {
				c = c.Alias
			}
			if c.Kind != yaml.ScalarNode || c.ShortTag() == "!!null" {
				return nil, fmt.Errorf("item %d of the list is not a plain value", i+1)
			}
			items[i] = c.Value
		}
		return checkList(fl, items)
	}
	return nil, errors.New("want a value or a list, not a mapping")
}

func (p *yamlParser) unknown(kn *yaml.Node) error {
	name := kn.Value
	switch alt := strings.ReplaceAll(strings.ToLower(name), "_", "-"); {
	case kn.Kind != yaml.ScalarNode:
		return fmt.Errorf("%s:%d: want an option name", p.path, kn.Line)
	case name == p.l.o.ConfigFlag:
		return fmt.Errorf("%s:%d: unknown option %q: a config file cannot name another", p.path, kn.Line, name)
	case alt != name && (p.l.fs.Lookup(alt) != nil && p.l.settable(alt) || p.l.known(alt)):
		return fmt.Errorf("%s:%d: unknown option %q (did you mean %q?)", p.path, kn.Line, name, alt)
	}
	return fmt.Errorf("%s:%d: unknown option %q", p.path, kn.Line, name)
}

// oldLine is a line of the format binlane read before YAML: name = value.
var oldLine = regexp.MustCompile(`^\s*[A-Za-z][A-Za-z0-9_-]*\s*=`)

// oldFormat names the first "name = value" line of a file YAML cannot read
// as options. "name: value" lines, the old format's other spelling, are
// YAML and still read the same.
func (p *yamlParser) oldFormat(b []byte) error {
	for i, line := range strings.Split(string(b), "\n") {
		if oldLine.MatchString(line) {
			name := strings.TrimSpace(line[:strings.IndexByte(line, '=')])
			return fmt.Errorf(`%s:%d: "%s = …" is no longer read: the file is YAML now; write "%s: …" instead`,
				p.path, i+1, name, name)
		}
	}
	return nil
}

// Marshal is not needed: binlane never writes a config file.
func (p *yamlParser) Marshal(map[string]any) ([]byte, error) {
	return nil, errors.New("config: writing a config file is not supported")
}
