package main

// The copy's scale: binlane's copy (its default copy workers) and the
// LOAD DATA ceiling with indexes built after the load, at growing sizes,
// each on a source of its own; what grows with the size is the time per
// row (near 1.0x: linear) and binlane's peak memory (RSS, bounded in bytes
// whatever the size).

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// copyScale is one size: rows in all, over tables.
type copyScale struct{ rows, tables int }

func (s copyScale) String() string {
	return fmt.Sprintf("%s rows in %d table%s", humanRows(s.rows), s.tables, map[bool]string{true: "s"}[s.tables > 1])
}

// parseScales reads "500k,2M,8M,8Mx1": total rows (k and M suffixes),
// optionally xTABLES (else tables).
func parseScales(s string, tables int) ([]copyScale, error) {
	var out []copyScale
	for _, f := range split(s) {
		rows, n, _ := strings.Cut(f, "x")
		sc := copyScale{tables: tables}
		if n != "" {
			var err error
			if sc.tables, err = strconv.Atoi(n); err != nil || sc.tables < 1 {
				return nil, fmt.Errorf("%q: bad table count", f)
			}
		}
		mult := 1.0
		switch {
		case strings.HasSuffix(rows, "M"):
			mult, rows = 1e6, strings.TrimSuffix(rows, "M")
		case strings.HasSuffix(rows, "k"):
			mult, rows = 1e3, strings.TrimSuffix(rows, "k")
		}
		v, err := strconv.ParseFloat(rows, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q: bad row count", f)
		}
		sc.rows = int(math.Round(v * mult))
		if sc.rows%sc.tables != 0 {
			return nil, fmt.Errorf("%q: %d rows do not divide into %d tables", f, sc.rows, sc.tables)
		}
		out = append(out, sc)
	}
	return out, nil
}

func humanRows(n int) string {
	switch {
	case n >= 1e6 && n%100000 == 0:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + "M"
	case n >= 1e3 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// scaleResult is one size's runs.
type scaleResult struct {
	scale copyScale
	res   scenarioResult
}

func runCopyScales(ctx context.Context, c config, bin, outDir string, log *slog.Logger) error {
	if len(c.copyScales) == 0 {
		return nil
	}
	workers := 4
	if len(c.copyWorkers) > 0 && !slices.Contains(c.copyWorkers, 4) {
		workers = c.copyWorkers[len(c.copyWorkers)-1]
	}
	var all []scaleResult
	for _, sc := range c.copyScales {
		cs, err := prepareCopySource(ctx, c, sc.tables, sc.rows/sc.tables, log)
		if err != nil {
			return err
		}
		cs.bin = bin
		list := []copyContender{
			{name: fmt.Sprintf("binlane copy workers=%d", workers), kind: "binlane", verify: true,
				run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
					return runBinlaneCopy(ctx, c, bin, cs, dst, workers, true)
				}},
			{name: fmt.Sprintf("ceiling: LOAD DATA threads=%d, indexes after", workers), kind: "ceiling", verify: true,
				run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
					return runLoadData(ctx, cs, dst, workers, true, true)
				}},
		}
		list = onlyMatching(c, list)
		res := scenarioResult{Spec: scenarioSpec{name: "copy-scale", title: sc.String()}, Backlog: sc.rows}
		err = runCopyContenders(ctx, c, cs, list, &res, false, log)
		cs.close()
		if err != nil {
			return err
		}
		all = append(all, scaleResult{scale: sc, res: res})
		if err := writeScaleResults(outDir, c, all); err != nil {
			return err
		}
	}
	return nil
}

var peakRSS = regexp.MustCompile(`peak RSS ([0-9]+) MiB`)

// writeScaleResults writes copy-scale.md: per size, binlane's and the
// ceiling's seconds, binlane's peak RSS, and the growth of the time per row
// against the smallest size (1.00x: linear).
func writeScaleResults(dir string, c config, all []scaleResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Copy at scale: binlane and the LOAD DATA ceiling (indexes after)\n\n"+
		"%s. sysbench `oltp_read_write` tables into an empty durable target (binlog on), source idle. Seconds are the median of %d interleaved runs (all in brackets). Machine speed at the start: %s.\n\n",
		time.Now().UTC().Format(time.RFC3339), max(1, c.repeat), c.machine)
	b.WriteString("| size | binlane s | rows/s | binlane peak RSS | ceiling s | binlane / ceiling | binlane time per row vs the first size | verify | binlane notes |\n|---|---:|---:|---:|---:|---:|---:|---|---|\n")
	var firstPerRow float64
	for i, sr := range all {
		var bl, ceil runResult
		for _, r := range sr.res.Runs {
			switch r.Kind {
			case "binlane":
				bl = r
			case "ceiling":
				ceil = r
			}
		}
		perRow := bl.Elapsed.Seconds() / float64(sr.scale.rows)
		if i == 0 {
			firstPerRow = perRow
		}
		rss := "?"
		if m := peakRSS.FindStringSubmatch(bl.Detail); m != nil {
			rss = m[1] + " MiB"
		}
		rel := ""
		if ceil.Elapsed > 0 {
			rel = fmt.Sprintf("%.2fx", bl.Elapsed.Seconds()/ceil.Elapsed.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %.2fx | %s / %s | %s |\n", sr.scale, secondsCell(bl), bl.TrxPerS, rss,
			secondsCell(ceil), rel, perRow/firstPerRow, bl.Verified, ceil.Verified, bl.Detail)
	}
	return os.WriteFile(filepath.Join(dir, "copy-scale.md"), []byte(b.String()), 0o644)
}
