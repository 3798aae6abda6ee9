package sandbox

import (
	"context"
	"testing"
	"time"
)

func TestSourceStartsWithReplicationSettings(t *testing.T) {
	s := StartT(t, Options{Role: Source, Extra: []string{"binlog-checksum=NONE"}})
	db := s.OpenT(t, "")
	var format, image, meta, checksum string
	var strict, serverID int
	err := db.QueryRow("SELECT @@binlog_format, @@binlog_row_image, @@binlog_row_metadata, @@binlog_checksum, @@gtid_strict_mode, @@server_id").
		Scan(&format, &image, &meta, &checksum, &strict, &serverID)
	if err != nil {
		t.Fatal(err)
	}
	if format != "ROW" || image != "FULL" || meta != "FULL" || strict != 1 || serverID != 1 {
		t.Fatalf("unexpected settings: %s %s %s strict=%d id=%d", format, image, meta, strict, serverID)
	}
	if checksum != "NONE" {
		t.Fatalf("extra option not applied: binlog_checksum=%s", checksum)
	}
}

func TestRestartKeepsDataAndPort(t *testing.T) {
	s := StartT(t, Options{Role: Target})
	s.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)")
	port := s.Port
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("server still running after Kill")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Port != port {
		t.Fatalf("port changed: %d -> %d", port, s.Port)
	}
	var n int
	if err := s.OpenT(t, "d").QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after restart: n=%d err=%v", n, err)
	}
}

func TestTwoServersRunSideBySide(t *testing.T) {
	a := StartT(t, Options{Role: Source})
	b := StartT(t, Options{Role: Target})
	if a.Port == b.Port || a.Dir == b.Dir {
		t.Fatal("servers share a port or folder")
	}
	var id int
	if err := b.OpenT(t, "").QueryRow("SELECT @@server_id").Scan(&id); err != nil || id != 2 {
		t.Fatalf("target server_id=%d err=%v", id, err)
	}
}
