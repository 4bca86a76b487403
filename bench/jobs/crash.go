package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// crashReport is one library's crash check.
type crashReport struct {
	kills      int           // SIGKILLs of the child
	inFlight   int           // rows running at the kills, summed (leases of earlier kills not yet expired count again)
	completed  int           // jobs the library marks completed
	lost       int           // jobs not completed, or completed without their effect
	twice      int           // jobs whose effect was applied more than once
	fenced     int           // two committed runs of one job with the same attempt (a lease broken)
	reruns     int           // re-runs after a kill that found the effect already applied (at least once)
	recovery   time.Duration // the last child's run, from its start to every job completed
	childError string
}

func (c crashReport) ok(n int) bool {
	return c.completed == n && c.lost == 0 && c.twice == 0 && c.fenced == 0 && c.childError == ""
}

// crashCheck runs the crash check of both libraries on every engine.
func crashCheck(ctx context.Context, o options, pg *pgServer) error {
	fmt.Printf("crash check: %d jobs, %d workers; a handler works %s, then records its effect in the same database\n", o.crashN, o.workers, o.jobSleep)
	fmt.Printf("(platform: an idempotent handler, effect applied once per job id in its own transaction; River: effect and river.JobCompleteTx in one transaction);\n")
	fmt.Printf("the child process is killed with SIGKILL %d times mid-run, restarted each time, then left to finish.\n", o.kills)
	fmt.Printf("lease: platform kind Timeout %s + LeaseGrace %s (SQLite: ReclaimAbandoned at start); River JobTimeout %s, RescueStuckJobsAfter %s\n\n",
		crashTimeout, crashLeaseGrace, crashTimeout, crashTimeout+crashLeaseGrace)
	fmt.Println("| engine | library | kills | rows running at the kills (summed) | completed | lost | applied twice | same attempt twice | re-runs (at least once) | last child's run | result |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	verdict := map[string]string{}
	failed := false
	for _, engine := range o.engines {
		for _, lib := range []string{"platform", "river"} {
			if o.only != "" && lib != o.only {
				continue
			}
			c, err := crashOne(ctx, o, engine, pg, lib)
			if err != nil {
				return fmt.Errorf("crash check of %s on %s: %w", lib, engine, err)
			}
			res := "PASS"
			if !c.ok(o.crashN) {
				res, failed = "FAIL", true
				if c.childError != "" {
					res += " (" + c.childError + ")"
				}
			}
			if verdict[lib] == "" || res != "PASS" {
				verdict[lib] = res
			}
			fmt.Printf("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %.1fs | %s |\n", engine, lib, c.kills, c.inFlight,
				c.completed, c.lost, c.twice, c.fenced, c.reruns, c.recovery.Seconds(), res)
		}
	}
	fmt.Printf("\ncrash check (every job completed exactly once after %d SIGKILLs): platform %s, River %s\n", o.kills, verdict["platform"], verdict["river"])
	if failed {
		return fmt.Errorf("crash check failed")
	}
	return nil
}

// crashOne prepares a database with o.crashN jobs, kills the child
// o.kills times mid-run, lets the last one finish and checks the outcome.
func crashOne(ctx context.Context, o options, engine string, pg *pgServer, lib string) (crashReport, error) {
	dsn, cleanup, err := freshDSN(ctx, o, engine, pg, "crash_"+lib)
	if err != nil {
		return crashReport{}, err
	}
	defer cleanup()
	jobsTable, doneState, idText := "jobs", "done", "j.id"
	switch {
	case lib == "platform":
		err = preparePlatform(ctx, dsn, o.crashN)
	case engine == "postgres":
		jobsTable, doneState, idText = "river_job", "completed", "CAST(j.id AS TEXT)"
		var d *riverDB[pgx.Tx]
		if d, err = riverPostgres(ctx, dsn); err == nil {
			err = prepareRiver(ctx, d, o.crashN)
			d.close()
		}
	default:
		jobsTable, doneState, idText = "river_job", "completed", "CAST(j.id AS TEXT)"
		var d *riverDB[*sql.Tx]
		if d, err = riverSQLite(dsn, o.riverConn); err == nil {
			err = prepareRiver(ctx, d, o.crashN)
			d.close()
		}
	}
	if err != nil {
		return crashReport{}, fmt.Errorf("prepare: %w", err)
	}
	mon, err := openMonitor(engine, dsn)
	if err != nil {
		return crashReport{}, err
	}
	defer mon.Close()
	count := func(q string) int {
		var n int
		if err := mon.QueryRowContext(ctx, q).Scan(&n); err != nil {
			fmt.Fprintln(os.Stderr, "bench/jobs: monitor:", err)
			return -1
		}
		return n
	}

	var c crashReport
	logPath := filepath.Join(o.dir, "child-"+engine+"-"+lib+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return c, err
	}
	defer logf.Close()
	self, err := os.Executable()
	if err != nil {
		return c, err
	}
	child := func() (*exec.Cmd, error) {
		cmd := exec.Command(self, "-child", lib, "-child-dsn", dsn, "-child-total", strconv.Itoa(o.crashN),
			"-workers", strconv.Itoa(o.workers), "-job-sleep", o.jobSleep.String(), "-poll", o.poll.String(),
			"-river-cooldown", o.cooldown.String(), "-river-sqlite-conns", strconv.Itoa(o.riverConn))
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd, cmd.Start()
	}
	// Each child makes some progress (a share of the jobs) before the kill,
	// so that every kill lands while jobs are running.
	step := max(o.crashN/(2*(o.kills+1)), 1)
	for range o.kills {
		before := count(`SELECT count(*) FROM bench_effect`)
		cmd, err := child()
		if err != nil {
			return c, err
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		for waiting := true; waiting; {
			select {
			case <-exited:
				waiting = false
			case <-time.After(5 * time.Millisecond): // watching another process's progress
				if count(`SELECT count(*) FROM bench_effect`) >= before+step {
					waiting = false
				}
			}
		}
		c.inFlight += max(count(`SELECT count(*) FROM `+jobsTable+` WHERE state = 'running'`), 0)
		cmd.Process.Kill()
		<-exited
		c.kills++
	}
	start := time.Now()
	cmd, err := child()
	if err != nil {
		return c, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			c.childError = "last child: " + err.Error() + "; see " + logPath
		}
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		<-done
		c.childError = "last child did not finish in 5 minutes"
	}
	c.recovery = time.Since(start)

	c.completed = count(`SELECT count(*) FROM ` + jobsTable + ` WHERE state = '` + doneState + `'`)
	c.lost = o.crashN - c.completed + count(`SELECT count(*) FROM `+jobsTable+` j WHERE j.state = '`+doneState+`'
		AND NOT EXISTS (SELECT 1 FROM bench_effect e WHERE e.job_id = `+idText+` AND e.applied = 1)`)
	c.twice = count(`SELECT count(*) FROM (SELECT job_id FROM bench_effect WHERE applied = 1 GROUP BY job_id HAVING count(*) > 1) x`)
	c.fenced = count(`SELECT count(*) FROM (SELECT job_id, attempt FROM bench_effect GROUP BY job_id, attempt HAVING count(*) > 1) x`)
	c.reruns = count(`SELECT count(*) FROM bench_effect WHERE applied = 0`)
	return c, nil
}

// openMonitor opens the parent's own connection to the crash check's database.
func openMonitor(engine, dsn string) (*sql.DB, error) {
	if engine == "postgres" {
		return sql.Open("pgx", dsn)
	}
	db, err := sql.Open("sqlite3", sqliteDSN(dsn))
	if err == nil {
		db.SetMaxOpenConns(1)
	}
	return db, err
}
