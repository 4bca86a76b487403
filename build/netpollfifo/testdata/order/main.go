// Command order prints the order in which one P serves 24 connections
// whose requests arrived in order 0..23 while their goroutines were parked
// in the network poller (netpollfifo's test builds it with and without the
// overlay).
package main

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
)

func main() {
	runtime.GOMAXPROCS(1)
	const n = 24
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	clients := make([]net.Conn, n)
	servers := make([]net.Conn, n)
	for i := range n {
		clients[i], err = net.Dial("tcp", ln.Addr().String())
		check(err)
		servers[i], err = ln.Accept()
		check(err)
	}
	var (
		mu     sync.Mutex
		served []int
		wg     sync.WaitGroup
	)
	parked := make(chan struct{}, n)
	for i, sc := range servers {
		wg.Go(func() {
			parked <- struct{}{}
			var b [1]byte
			_, err := sc.Read(b[:])
			check(err)
			mu.Lock()
			served = append(served, i)
			mu.Unlock()
		})
	}
	for range n {
		<-parked
	}
	runtime.Gosched() // the readers park in the poller
	for _, c := range clients {
		_, err := c.Write([]byte{1})
		check(err)
	}
	wg.Wait()
	fmt.Println(served)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
