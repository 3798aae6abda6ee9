package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/verify"
)

const checkerPassword = "s3cret-pw"

// runVerifyCmd runs `binlane verify args...` in-process and fails the test
// if a password appears anywhere in its output or error.
func runVerifyCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := newVerifyCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out, logs bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&logs)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	all := out.String() + logs.String()
	if err != nil {
		all += err.Error()
	}
	for _, pw := range []string{checkerPassword, "wrong-pw"} {
		if strings.Contains(all, pw) {
			t.Errorf("password %q printed:\n%s", pw, all)
		}
	}
	return out.String(), err
}

func TestVerifyCommand(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	tgt := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	for _, s := range []*sandbox.Server{src, tgt} {
		// A SELECT privilege is all verify needs.
		s.ExecT(t, "CREATE USER checker@'%' IDENTIFIED BY '"+checkerPassword+"'", "GRANT SELECT ON *.* TO checker@'%'",
			"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(10))",
			"INSERT INTO app.t VALUES (1, 'a'), (2, 'b')",
			"CREATE DATABASE other", "CREATE TABLE other.t (id INT PRIMARY KEY)")
	}
	tgt.ExecT(t, "INSERT INTO other.t VALUES (1)") // outside the database the source URL names
	srcURL := fmt.Sprintf("mysql://checker:%s@%s/app", checkerPassword, src.Addr())
	tgtDSN := fmt.Sprintf("checker@tcp(%s)/", tgt.Addr())
	t.Setenv("CHECKER_PW", checkerPassword)

	out, err := runVerifyCmd(t, "--source", srcURL, "--target", tgtDSN, "--target-password-env", "CHECKER_PW")
	if err != nil {
		t.Fatalf("equal servers: %v\n%s", err, out)
	}
	for _, want := range []string{"app.t", "equal", "PRIMARY (id)", "1 tables, 1 equal, 0 differing"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	tgt.ExecT(t, "UPDATE app.t SET v = 'B' WHERE id = 2")
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(checkerPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runVerifyCmd(t, "--source", srcURL, "--target", tgtDSN, "--target-password-file", pwFile,
		"--json", "--chunk-rows", "1", "--parallel", "2", "--max-diffs", "3")
	if err == nil || !strings.Contains(err.Error(), "1 of 1 tables differ") {
		t.Fatalf("difference not an error: %v", err)
	}
	var rep verify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	tr := rep.Tables[0]
	if tr.Status != verify.StatusDifferent || tr.Chunks != 3 || len(tr.Diffs) != 1 ||
		!reflect.DeepEqual(tr.Diffs[0].Key, []string{"2"}) || tr.Diffs[0].Columns[0].Target != "'B'" {
		t.Errorf("report: %s", out)
	}

	// --databases overrides the URL's database; the text report names the row.
	out, err = runVerifyCmd(t, "--source", srcURL, "--target", tgtDSN, "--target-password-env", "CHECKER_PW",
		"--databases", "app,other", "--exclude", "app.t")
	if err == nil || !strings.Contains(out, "other.t") || strings.Contains(out, "app.t") {
		t.Errorf("rules: %v\n%s", err, out)
	}

	badURL := fmt.Sprintf("mysql://checker:wrong-pw@%s/app", src.Addr())
	if _, err := runVerifyCmd(t, "--source", badURL, "--target", tgtDSN); err == nil ||
		!strings.Contains(err.Error(), "checker:***@") {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := runVerifyCmd(t, "--target", tgtDSN); err == nil {
		t.Error("missing --source accepted")
	}
}

// TestVerifyCommandObjects: verify, as an account with exactly the
// README's verify grants, reports a view that differs and a procedure
// missing on the target by kind and name, in text and JSON, and exits 1;
// --rows-only leaves them out; equal objects exit 0.
func TestVerifyCommandObjects(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	tgt := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	for _, s := range []*sandbox.Server{src, tgt} {
		s.ExecT(t, append([]string{"CREATE USER checker@'%' IDENTIFIED BY '" + checkerPassword + "'"},
			sandbox.VerifyGrants("checker@'%'", "app")...)...)
		s.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)", "INSERT INTO app.t VALUES (1, 1)",
			"CREATE VIEW app.v AS SELECT id FROM app.t", "CREATE PROCEDURE app.p() SELECT COUNT(*) FROM app.t")
	}
	t.Setenv("CHECKER_PW", checkerPassword)
	args := []string{"--source", "checker@tcp(" + src.Addr() + ")/app", "--target", "checker@tcp(" + tgt.Addr() + ")/",
		"--source-password-env", "CHECKER_PW", "--target-password-env", "CHECKER_PW"}
	if out, err := runVerifyCmd(t, args...); err != nil || !strings.Contains(out, "3 objects, 3 equal, 0 differing") {
		t.Fatalf("equal objects: %v\n%s", err, out)
	}

	tgt.ExecT(t, "CREATE OR REPLACE VIEW app.v AS SELECT id, v FROM app.t", "DROP PROCEDURE app.p")
	out, err := runVerifyCmd(t, args...)
	if exitCode(err) != exitDiffer || !strings.Contains(err.Error(), "2 of 3 objects differ") {
		t.Fatalf("differing objects: exit %d, %v\n%s", exitCode(err), err, out)
	}
	for _, want := range []string{"view app.v: different", "procedure app.p: missing-on-target", "line 1 of the definition"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	out, _ = runVerifyCmd(t, append(args, "--json")...)
	var rep verify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	if v := rep.Object(verify.KindView, "app", "v"); v == nil || v.Status != verify.ObjectDifferent || v.Target == "" {
		t.Errorf("JSON view: %+v\n%s", v, out)
	}
	if p := rep.Object(verify.KindProcedure, "app", "p"); p == nil || p.Status != verify.ObjectMissing {
		t.Errorf("JSON procedure: %+v", p)
	}
	if out, err := runVerifyCmd(t, append(args, "--rows-only")...); err != nil || strings.Contains(out, "objects") {
		t.Errorf("--rows-only: %v\n%s", err, out)
	}
}
