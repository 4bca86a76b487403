// Command app is the example server app the runtime tests build and run:
// it listens on $PORT, answers /health, shows its environment, and has
// routes that crash it and that probe the sandbox (read, write or stat a
// file, connect to an address). Run with the argument "worker" it is a worker program: no
// port, a line on stdout per line it reads from a file in its directory.
package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		worker()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "burn" {
		burn()
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		k := r.URL.Query().Get("k")
		if k == "" {
			fmt.Fprint(w, strings.Join(os.Environ(), "\n"))
			return
		}
		v, ok := os.LookupEnv(k)
		if !ok {
			http.Error(w, "unset", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, v)
	})
	mux.HandleFunc("/crash", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(os.Stderr, "crashing on request")
		os.Exit(3)
	})
	mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, "refused: "+err.Error(), http.StatusForbidden)
			return
		}
		w.Write(b)
	})
	mux.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) {
		data := []byte("x")
		if n, err := strconv.Atoi(r.URL.Query().Get("size")); err == nil && n > 0 {
			data = make([]byte, n)
		}
		if err := os.WriteFile(r.URL.Query().Get("path"), data, 0o644); err != nil {
			http.Error(w, "refused: "+err.Error(), http.StatusForbidden)
			return
		}
		fmt.Fprint(w, "written")
	})
	mux.HandleFunc("/stat", func(w http.ResponseWriter, r *http.Request) {
		fi, err := os.Stat(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, "refused: "+err.Error(), http.StatusForbidden)
			return
		}
		fmt.Fprint(w, fi.Mode().String())
	})
	mux.HandleFunc("/dial", func(w http.ResponseWriter, r *http.Request) {
		c, err := net.DialTimeout("tcp", r.URL.Query().Get("addr"), 2*time.Second)
		if err != nil {
			http.Error(w, "refused: "+err.Error(), http.StatusForbidden)
			return
		}
		c.Close()
		fmt.Fprint(w, "connected")
	})
	mux.HandleFunc("/resolve", func(w http.ResponseWriter, r *http.Request) {
		addrs, err := net.LookupHost(r.URL.Query().Get("name"))
		if err != nil {
			http.Error(w, "refused: "+err.Error(), http.StatusForbidden)
			return
		}
		fmt.Fprint(w, strings.Join(addrs, " "))
	})
	mux.HandleFunc("/id", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "uid=%d pid=%d", os.Getuid(), os.Getpid())
	})
	mux.HandleFunc("/alloc", func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 2<<30)
		for i := range b {
			b[i] = 1
		}
		fmt.Fprint(w, len(b))
	})
	mux.HandleFunc("/syscall", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, trySyscall(r.URL.Query().Get("name")))
	})
	fmt.Println("listening on", os.Getenv("PORT"))
	srv := &http.Server{Addr: "127.0.0.1:" + os.Getenv("PORT"), Handler: mux}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		<-ch
		fmt.Println("draining")
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func worker() {
	fmt.Println("worker started for", os.Getenv("SERVICE_PROJECT_ID"))
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	<-ch
	fmt.Println("worker stopping")
}

// burn is a worker that keeps every CPU it may use busy (the CPU limit
// tests).
func burn() {
	fmt.Println("burning")
	for i := 0; i < runtime.NumCPU(); i++ {
		go func() {
			x := 0
			for {
				x++
			}
		}()
	}
	select {}
}

// trySyscall makes one system call the sandbox's seccomp filter refuses
// (or, for "exec", one it allows) and says "ok" or the error number.
func trySyscall(name string) string {
	var err error
	switch name {
	case "ptrace":
		// PTRACE_ATTACH to a pid that does not exist: ESRCH when
		// allowed, EPERM when filtered.
		_, _, e := syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_ATTACH, 999999, 0)
		if e != 0 {
			err = e
		}
	case "mount":
		err = syscall.Mount("none", "/tmp", "tmpfs", 0, "")
	case "unshare":
		err = syscall.Unshare(syscall.CLONE_NEWUSER)
	case "clone-newuser":
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		err = cmd.Run()
	case "exec":
		err = exec.Command("/bin/true").Run()
	default:
		return "unknown"
	}
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return "errno " + strconv.Itoa(int(errno))
	default:
		return "error " + err.Error()
	}
}
