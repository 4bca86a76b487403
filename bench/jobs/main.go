// Command jobs measures the platform's job runner (controlplane/jobs)
// beside River (github.com/riverqueue/river) on the same engine: SQLite
// files opened with the same settings, and PostgreSQL when a server can be
// started. Each round enqueues N empty jobs with each library (in the order
// that alternates between rounds), then runs them to completion with the
// same worker count, and reports enqueue, run and end-to-end jobs per
// second. The ratios platform ÷ River, medians of per-round ratios, are
// printed last.
//
// -crash runs the crash check instead: a child process runs jobs whose
// handler records its effect in the same database; the parent kills it
// with SIGKILL mid-run a few times, restarts it, and checks at the end that
// every job completed exactly once.
//
//	go run . -n 10000 -workers 8 -rounds 3
//	go run . -crash
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

// options are the command's flags.
type options struct {
	n         int
	workers   int
	rounds    int
	engines   []string
	dir       string
	poll      time.Duration
	cooldown  time.Duration
	riverConn int
	pgDSN     string
	only      string

	crash      bool
	crashN     int
	kills      int
	jobSleep   time.Duration
	child      string // "platform" or "river": run as the crash check's child
	childDSN   string
	childTotal int
}

func main() {
	var o options
	var engines, cpuprofile string
	flag.IntVar(&o.n, "n", 10000, "jobs a run enqueues and runs")
	flag.IntVar(&o.workers, "workers", 8, "jobs run at once (both libraries)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; the order alternates between rounds")
	flag.StringVar(&engines, "engines", "sqlite,postgres", "engines to run on (postgres needs Debian's postgresql or -pg-dsn)")
	flag.StringVar(&o.dir, "dir", "", "scratch directory for database files (default: a new temporary one, removed at the end)")
	flag.DurationVar(&o.poll, "poll", 20*time.Millisecond, "poll interval of both (platform PollInterval, River FetchPollInterval)")
	flag.DurationVar(&o.cooldown, "river-cooldown", 2*time.Millisecond, "River's FetchCooldown (its default is 100ms)")
	flag.IntVar(&o.riverConn, "river-sqlite-conns", 1, "River's SQLite pool size (riversqlite recommends 1; the platform's store uses 8)")
	flag.StringVar(&o.pgDSN, "pg-dsn", "", "an existing PostgreSQL server's admin address (postgres://...); default: start one from /usr/lib/postgresql")
	flag.StringVar(&o.only, "only", "", "run one library only: platform or river (for profiling)")
	flag.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run")
	flag.BoolVar(&o.crash, "crash", false, "run the crash check instead of the benchmark")
	flag.IntVar(&o.crashN, "crash-n", 2000, "jobs of the crash check")
	flag.IntVar(&o.kills, "kills", 4, "SIGKILLs of the crash check's child")
	flag.DurationVar(&o.jobSleep, "job-sleep", 2*time.Millisecond, "how long a crash-check job's handler works")
	flag.StringVar(&o.child, "child", "", "internal: run as the crash check's child for this library")
	flag.StringVar(&o.childDSN, "child-dsn", "", "internal: the child's database")
	flag.IntVar(&o.childTotal, "child-total", 0, "internal: jobs the child waits for")
	flag.Parse()
	o.engines = strings.Split(engines, ",")

	if o.child != "" {
		if err := runChild(o); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if o.dir != "" {
		if err := os.MkdirAll(o.dir, 0o755); err != nil {
			fatal(err)
		}
	} else {
		d, err := os.MkdirTemp("", "bench-jobs-")
		if err != nil {
			fatal(err)
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	ctx := context.Background()
	var pg *pgServer
	if slices.Contains(o.engines, "postgres") {
		var err error
		pg, err = startPostgres(ctx, o.pgDSN)
		if err != nil {
			fmt.Printf("PostgreSQL: not run (%v)\n", err)
			o.engines = slices.DeleteFunc(o.engines, func(e string) bool { return e == "postgres" })
		} else {
			defer pg.stop()
		}
	}
	var err error
	if o.crash {
		err = crashCheck(ctx, o, pg)
	} else {
		err = bench(ctx, o, pg)
	}
	if err != nil {
		pprof.StopCPUProfile()
		if pg != nil {
			pg.stop()
		}
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench/jobs:", err)
	os.Exit(1)
}

// result is one library's run.
type result struct {
	enqueue, run time.Duration
	n            int
}

func (r result) enqueueRate() float64 { return float64(r.n) / r.enqueue.Seconds() }
func (r result) runRate() float64     { return float64(r.n) / r.run.Seconds() }
func (r result) e2eRate() float64     { return float64(r.n) / (r.enqueue + r.run).Seconds() }

// lib is one library's benchmark on a fresh database of engine.
type lib struct {
	name string
	run  func(ctx context.Context, o options, engine string, pg *pgServer, round int) (result, error)
}

func bench(ctx context.Context, o options, pg *pgServer) error {
	libs := []lib{{"platform", benchPlatform}, {"river", benchRiver}}
	if o.only != "" {
		libs = slices.DeleteFunc(libs, func(l lib) bool { return l.name != o.only })
	}
	fmt.Printf("background jobs: %d empty jobs a run, %d workers, %d rounds, poll %s, River FetchCooldown %s\n",
		o.n, o.workers, o.rounds, o.poll, o.cooldown)
	fmt.Printf("SQLite: mattn/go-sqlite3 for both, journal_mode=WAL, synchronous=FULL, busy_timeout=10000, BEGIN IMMEDIATE; pools: platform 8 (its store), River %d\n", o.riverConn)
	if pg != nil {
		fmt.Printf("PostgreSQL: %s, fsync and synchronous_commit on (the server's defaults); platform database/sql over pgx (16 conns), River pgxpool (16 conns)\n", pg.version)
	} else {
		fmt.Println("PostgreSQL: not run; SQLite only")
	}
	type ratios struct{ enq, run, e2e []float64 }
	summary := map[string]*ratios{}
	for _, engine := range o.engines {
		summary[engine] = &ratios{}
		fmt.Printf("\n%s\n| round | library | enqueue jobs/s | run jobs/s | end-to-end jobs/s |\n|---|---|---:|---:|---:|\n", engine)
		for round := range o.rounds {
			order := slices.Clone(libs)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			got := map[string]result{}
			for _, l := range order {
				r, err := l.run(ctx, o, engine, pg, round)
				if err != nil {
					return fmt.Errorf("%s on %s, round %d: %w", l.name, engine, round+1, err)
				}
				got[l.name] = r
				fmt.Printf("| %d | %s | %.0f | %.0f | %.0f |\n", round+1, l.name, r.enqueueRate(), r.runRate(), r.e2eRate())
			}
			p, okp := got["platform"]
			rv, okr := got["river"]
			if okp && okr {
				s := summary[engine]
				s.enq = append(s.enq, p.enqueueRate()/rv.enqueueRate())
				s.run = append(s.run, p.runRate()/rv.runRate())
				s.e2e = append(s.e2e, p.e2eRate()/rv.e2eRate())
			}
		}
	}
	if len(libs) < 2 {
		return nil
	}
	fmt.Printf("\nplatform ÷ River (median of per-round ratios; >= 1.0 is the platform ahead)\n")
	for _, engine := range o.engines {
		s := summary[engine]
		fmt.Printf("%s: enqueue %.2fx, run %.2fx, end-to-end %.2fx\n", engine, median(s.enq), median(s.run), median(s.e2e))
	}
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
