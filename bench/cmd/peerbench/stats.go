package main

import (
	"os"
	"slices"
	"syscall"
	"time"
)

// median of xs (NaN-free), 0 for none.
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

// percentile of sorted xs, p in [0, 100].
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p / 100 * float64(len(sorted)-1))
	return sorted[i]
}

// processCPU is the CPU time, user and system, every thread of this
// process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pidCPU is the CPU time of process pid: the sum over its live threads of
// the nanoseconds each ran (/proc/PID/task/*/schedstat), or where that is
// missing the user and system time of /proc/PID/stat (10-ms ticks, with
// waited-for children). For the servers, which are other processes.
func pidCPU(pid int) time.Duration {
	if tasks, err := os.ReadDir("/proc/" + itoa(pid) + "/task"); err == nil && len(tasks) > 0 {
		var total time.Duration
		ok := false
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + itoa(pid) + "/task/" + t.Name() + "/schedstat")
			if err != nil {
				continue
			}
			f := splitFields(string(b))
			if len(f) == 0 {
				continue
			}
			var ns int64
			for _, c := range f[0] {
				ns = ns*10 + int64(c-'0')
			}
			total += time.Duration(ns)
			ok = true
		}
		if ok {
			return total
		}
	}
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis: state is field 3;
	// utime, stime, cutime, cstime are 14-17.
	i := len(b) - 1
	for i > 0 && b[i] != ')' {
		i--
	}
	fields := splitFields(string(b[i+2:]))
	if len(fields) < 15 {
		return 0
	}
	var ticks int64
	for _, f := range fields[11:15] {
		var v int64
		for _, c := range f {
			v = v*10 + int64(c-'0')
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i, c := range s {
		if c == ' ' || c == '\n' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}
