package streamstatus

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestSchemaDocumented: every field of the document has a row in
// docs/status-json.md, so the schema users read is the one binlane writes.
func TestSchemaDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/status-json.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() != reflect.TypeFor[Stream]().PkgPath() {
			return
		}
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Errorf("%s%s has no JSON name", prefix, f.Name)
				continue
			}
			if !strings.Contains(doc, "`"+name+"`") && !strings.Contains(doc, "`"+prefix+name+"`") {
				t.Errorf("docs/status-json.md does not document %s%s", prefix, name)
			}
			if name == "run" {
				walk("run.", f.Type)
			} else {
				walk(prefix, f.Type)
			}
		}
	}
	walk("", reflect.TypeFor[Stream]())
}
