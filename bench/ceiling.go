package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/provision"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
)

// createTables creates the source's sbtest tables on the target; with
// indexesAfter without the indexes binlane's copy defers, which it returns
// by table.
func createTables(ctx context.Context, sdb, ddb *sql.DB, indexesAfter bool) (map[string][]provision.Index, error) {
	if _, err := ddb.ExecContext(ctx, "CREATE DATABASE sbtest"); err != nil {
		return nil, err
	}
	rules, _ := filter.New([]string{"sbtest"}, nil, nil)
	defs, err := schema.ReadCatalog(ctx, sdb, rules, false)
	if err != nil {
		return nil, err
	}
	builds := map[string][]provision.Index{}
	for _, d := range defs {
		create, err := schema.ShowCreateTable(ctx, sdb, "sbtest", d.Name)
		if err != nil {
			return nil, err
		}
		if indexesAfter {
			create, builds[d.Name] = provision.Split(create, d)
		}
		if _, err := ddb.ExecContext(ctx, "USE sbtest"); err != nil {
			return nil, err
		}
		if _, err := ddb.ExecContext(ctx, strings.Replace(create, "CREATE TABLE ", "CREATE TABLE sbtest.", 1)); err != nil {
			return nil, err
		}
	}
	return builds, nil
}

// runLoadData is the target's ceiling: it creates the tables and loads the
// exported files with threads parallel LOAD DATA LOCAL INFILE statements
// (one per table). With indexesAfter the tables are created as binlane's
// copy creates them (the secondary indexes package provision defers left
// out) and each table's indexes are added by one ALTER TABLE after its
// load (threads at once): the physical reference for a copy that builds
// its indexes after the rows.
func runLoadData(ctx context.Context, cs *copySource, dst *sandbox.Server, threads int, binlog, indexesAfter bool) (time.Duration, string, error) {
	sdb, err := cs.src.Open("sbtest")
	if err != nil {
		return 0, "", err
	}
	defer sdb.Close()
	dcfg, err := mysql.ParseDSN(dst.DSN(""))
	if err != nil {
		return 0, "", err
	}
	if !binlog {
		dcfg.Params = map[string]string{"sql_log_bin": "0"}
	}
	conn, err := mysql.NewConnector(dcfg)
	if err != nil {
		return 0, "", err
	}
	ddb := sql.OpenDB(conn)
	defer ddb.Close()
	builds, err := createTables(ctx, sdb, ddb, indexesAfter)
	if err != nil {
		return 0, "", err
	}
	ddb.SetMaxOpenConns(threads)
	tgtCPU := processCPU(dst.PID())
	t0 := time.Now()
	var loaded time.Duration
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(threads)
	for _, t := range cs.tables {
		path := filepath.Join(cs.dir, t+".tsv")
		mu.Lock()
		mysql.RegisterLocalFile(path)
		mu.Unlock()
		g.Go(func() error {
			if _, err := ddb.ExecContext(gctx, "LOAD DATA LOCAL INFILE "+sqlquote.String(path)+" INTO TABLE "+sqlquote.Qualified("sbtest", t)); err != nil {
				return fmt.Errorf("LOAD DATA: %w", err)
			}
			mu.Lock()
			loaded = max(loaded, time.Since(t0))
			mu.Unlock()
			if len(builds[t]) == 0 {
				return nil
			}
			if _, err := ddb.ExecContext(gctx, provision.Statement(provision.NewBuild("sbtest", t, builds[t], nil))); err != nil {
				return fmt.Errorf("index build: %w", err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, "", err
	}
	elapsed := time.Since(t0)
	detail := fmt.Sprintf("CPU s: target %.1f", (processCPU(dst.PID()) - tgtCPU).Seconds())
	if indexesAfter {
		detail += fmt.Sprintf("; last load done at %.1f s", loaded.Seconds())
	}
	return elapsed, detail, nil
}
