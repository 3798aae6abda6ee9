package main

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/analyze"
	"github.com/binlane/binlane/internal/streamstatus"
)

// summarizeStats turns binlane's status snapshot into "busy a/b/c%;
// commit d/e/f%; commit wait x/y/z%" over the run. Commit counts the last
// round trip of a batch at the head, which carries its statements with the
// COMMIT: one worker's batches are all there, so busy alone would show it
// idle.
func summarizeStats(stats string) string {
	var s streamstatus.Snapshot
	if stats == "" || json.Unmarshal([]byte(stats), &s) != nil {
		return ""
	}
	wall := s.At.Sub(s.Started).Seconds()
	if wall <= 0 {
		return ""
	}
	var busy, commit, wait []string
	var batches, txns, retries uint64
	for _, w := range s.Workers {
		retries += w.Retries
		busy = append(busy, fmt.Sprintf("%.0f", 100*w.Busy.Seconds()/wall))
		commit = append(commit, fmt.Sprintf("%.0f", 100*w.Commit.Seconds()/wall))
		wait = append(wait, fmt.Sprintf("%.0f", 100*w.CommitWait.Seconds()/wall))
		batches += w.Batches
		txns += w.Txns
	}
	per := 0.0
	if batches > 0 {
		per = float64(txns) / float64(batches)
	}
	out := fmt.Sprintf("busy %s%%; commit %s%%; commit wait %s%%; %.1f trx per target commit; %d of %d batches rendered ahead",
		strings.Join(busy, "/"), strings.Join(commit, "/"), strings.Join(wait, "/"), per, s.RenderedAhead, batches)
	// A rollback to break a lock wait between binlane's own batches stalls
	// the drain until the monitor sees it: a slow run shows why here.
	if s.SentAhead > 0 {
		out += fmt.Sprintf(", %d round trips sent ahead", s.SentAhead)
	}
	if kills := s.LockWaitKills + s.BlindKills; kills > 0 {
		out += fmt.Sprintf("; %d lock-wait rollbacks (%d blind)", kills, s.BlindKills)
	}
	// Work the target did twice: batches rolled back and applied again,
	// batches rendered ahead and handed back, merged batches redone one
	// statement at a time.
	if retries+s.AheadGaveWay+s.RedoneOneByOne > 0 {
		out += fmt.Sprintf("; %d batches retried, %d handed back, %d redone one by one", retries, s.AheadGaveWay, s.RedoneOneByOne)
	}
	return out
}

// writeResults writes results.md and chart.svg for everything run so far.
func writeResults(dir string, c config, all []scenarioResult) error {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# binlane vs MariaDB replica\n\n%s, %s, %d CPUs, Go %s. Seconds are the median of %d interleaved runs (all runs in brackets). Machine speed at the start: %s.\n\n",
		time.Now().UTC().Format(time.RFC3339), host, runtime.NumCPU(), runtime.Version(), max(1, c.repeat), c.machine)
	fmt.Fprintf(&b, "Backlogs: sysbench scenarios %d tables x %d rows, %d client threads (worst case: 1); application scenarios "+
		"from binlane's workload generator (internal/workload), %d sessions.\n\n", c.tables, c.tableSize, c.threads, c.appSessions)
	summary(&b, all)
	if c.pin {
		b.WriteString("Pinned (--pin): each target's mariadbd alone on one core, the source and binlane on the other.\n\n")
	}
	cpuSummary(&b, all)
	for _, sc := range all {
		best := bestNative(sc)
		fmt.Fprintf(&b, "## %s\n\n%d transactions.\n\n", sc.Spec.title, sc.Backlog)
		lag := sc.Spec.app != nil
		if lag {
			b.WriteString("| contender | seconds | trx/s | vs best MariaDB | peak lag (s) | verify | notes |\n|---|---:|---:|---:|---:|---|---|\n")
		} else {
			b.WriteString("| contender | seconds | trx/s | vs best MariaDB | verify | notes |\n|---|---:|---:|---:|---|---|\n")
		}
		for _, r := range sc.Runs {
			rel := ""
			if best > 0 {
				rel = fmt.Sprintf("%.2fx", r.TrxPerS/best)
			}
			if lag {
				fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %.2f | %s | %s |\n", r.Name, secondsCell(r), r.TrxPerS, rel,
					r.PeakLag.Seconds(), r.Verified, r.Detail)
			} else {
				fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s |\n", r.Name, secondsCell(r), r.TrxPerS, rel, r.Verified, r.Detail)
			}
		}
		b.WriteString("\n")
		cpuTable(&b, sc)
		predictions(&b, sc)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "chart.svg"), []byte(chart(all, "trx/s")), 0o644)
}

// workerRates returns binlane's trx/s by worker count.
func workerRates(sc scenarioResult) map[int]float64 {
	out := map[int]float64{}
	for _, r := range sc.Runs {
		var w int
		if _, err := fmt.Sscanf(r.Name, "binlane workers=%d", &w); err == nil {
			out[w] = r.TrxPerS
		}
	}
	return out
}

// summary is one line per scenario with what issue 17's goals are about:
// binlane's best against MariaDB's best, 4 workers against one, the worst
// worker count from 2 up against one, and analyze's prediction for 4.
func summary(b *strings.Builder, all []scenarioResult) {
	if len(all) == 0 {
		return
	}
	b.WriteString("| scenario | binlane best | MariaDB best | best / best | w4 / w1 | worst wN / w1 (N >= 2) | analyze w4 / w1 |\n" +
		"|---|---:|---:|---:|---:|---:|---:|\n")
	for _, sc := range all {
		rates := workerRates(sc)
		best, native := bestOf(sc, "binlane"), bestNative(sc)
		w1 := rates[1]
		cell := func(v float64, ok bool) string {
			if !ok {
				return ""
			}
			return fmt.Sprintf("%.2fx", v)
		}
		worst, worstN := 0.0, 0
		for n, r := range rates {
			if n >= 2 && w1 > 0 && (worstN == 0 || r/w1 < worst) {
				worst, worstN = r/w1, n
			}
		}
		worstCell := ""
		if worstN > 0 {
			worstCell = fmt.Sprintf("%.2fx (w%d)", worst, worstN)
		}
		pred := ""
		if p := sc.Predicted; p != nil && p.speedup[4] > 0 {
			pred = fmt.Sprintf("%.2fx", p.speedup[4])
		}
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %s | %s | %s | %s |\n", sc.Spec.name, best, native, cell(best/native, native > 0),
			cell(rates[4]/w1, w1 > 0 && rates[4] > 0), worstCell, pred)
	}
	b.WriteString("\n")
}

// predictions puts analyze's predicted speedups next to the measured
// ones, marking those more than 25% apart.
func predictions(b *strings.Builder, sc scenarioResult) {
	p := sc.Predicted
	if p == nil {
		return
	}
	if p.err != "" {
		fmt.Fprintf(b, "analyze failed: %s\n\n", p.err)
		return
	}
	rates := workerRates(sc)
	w1 := rates[1]
	if w1 == 0 {
		return
	}
	fmt.Fprintf(b, "`binlane analyze` on this backlog (--cores %d): parallelism %.1f, recommends %s.\n\n"+
		"| workers | measured speedup | predicted | predicted / measured |\n|---:|---:|---:|---:|\n",
		runtime.NumCPU(), p.parallelism, analyze.Workers(p.recommended))
	var ws []int
	for w := range rates {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	for _, w := range ws {
		m, pr := rates[w]/w1, p.speedup[w]
		if pr == 0 {
			continue
		}
		mark := ""
		if r := pr / m; r > 1.25 || r < 0.75 {
			mark = " (more than 25% apart)"
		}
		fmt.Fprintf(b, "| %d | %.2fx | %.2fx | %.2f%s |\n", w, m, pr, pr/m, mark)
	}
	b.WriteString("\n")
}

func bestNative(sc scenarioResult) float64 { return bestOf(sc, "mariadb") }

// secondsCell is the median and, with repetitions, every run's seconds.
func secondsCell(r runResult) string {
	secs := fmt.Sprintf("%.1f", r.Elapsed.Seconds())
	if len(r.All) > 1 {
		var all []string
		for _, d := range r.All {
			all = append(all, fmt.Sprintf("%.1f", d.Seconds()))
		}
		secs += " (" + strings.Join(all, ", ") + ")"
	}
	return secs
}

// chart draws one horizontal bar group per scenario: the rate (trx/s or
// rows/s) per contender, binlane in blue, the others in grey.
func chart(all []scenarioResult, unit string) string {
	const width, left, barH, gap = 900, 230, 18, 4
	max := 1.0
	rows := 0
	for _, sc := range all {
		rows += len(sc.Runs) + 2
		for _, r := range sc.Runs {
			if r.TrxPerS > max {
				max = r.TrxPerS
			}
		}
	}
	height := rows*(barH+gap) + 20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	y := 10
	for _, sc := range all {
		fmt.Fprintf(&b, `<text x="4" y="%d" font-weight="bold">%s (%s)</text>`+"\n", y+barH-4, html.EscapeString(sc.Spec.title), unit)
		y += barH + gap
		for _, r := range sc.Runs {
			w := int(float64(width-left-80) * r.TrxPerS / max)
			color := "#999999"
			if r.Kind == "binlane" {
				color = "#2b6cb0"
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-6, y+barH-5, html.EscapeString(r.Name))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, left, y, w, barH, color)
			fmt.Fprintf(&b, `<text x="%d" y="%d">%.0f</text>`+"\n", left+w+4, y+barH-5, r.TrxPerS)
			y += barH + gap
		}
		y += barH + gap
	}
	b.WriteString("</svg>\n")
	return b.String()
}
