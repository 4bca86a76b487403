package mail

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits of one bounce listener session.
const (
	maxSMTPLine       = 1000 // RFC 5321's limit of a command or text line, CRLF included
	maxBounceRcpts    = 10
	maxBounceErrors   = 10
	maxBounceMessages = 20
)

// RunBounces accepts reports on Config.BounceListen until ctx ends; with
// no listener configured it returns at once.
func (s *Service) RunBounces(ctx context.Context) error {
	if s.cfg.BounceListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.BounceListen)
	if err != nil {
		return fmt.Errorf("mail: bounce listener on %s: %w", s.cfg.BounceListen, err)
	}
	s.d.Logger.Info("mail: accepting bounces and complaints", "addr", ln.Addr().String(), "domain", s.cfg.BounceDomain)
	return s.ServeBounces(ctx, ln)
}

// ServeBounces runs the bounce listener on ln until ctx ends (it closes
// ln then). It speaks the receiving side of SMTP (EHLO/HELO, MAIL, RCPT,
// DATA, RSET, NOOP, QUIT) and accepts only mail to the VERP addresses of
// messages the platform sent, at most Config.BounceMaxBytes each, over at
// most Config.BounceMaxConns connections at once.
func (s *Service) ServeBounces(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	sem := make(chan struct{}, s.cfg.BounceMaxConns)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("mail: bounce listener: %w", err)
		}
		select {
		case sem <- struct{}{}:
		default:
			s.m.sessions.WithLabelValues("busy").Inc()
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, "421 4.7.0 too many connections, try again later\r\n")
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s.bounceSession(ctx, c)
		}()
	}
}

// bounceSession serves one connection.
func (s *Service) bounceSession(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	c.SetDeadline(time.Now().Add(s.cfg.BounceTimeout))
	br := bufio.NewReaderSize(c, 4096)
	bw := bufio.NewWriter(c)
	reply := func(format string, a ...any) bool {
		fmt.Fprintf(bw, format+"\r\n", a...)
		return bw.Flush() == nil
	}
	host := s.cfg.BounceDomain
	if !reply("220 %s ESMTP bounce receiver", host) {
		return
	}
	var (
		greeted, mailed bool
		tokens          []string
		errs, messages  int
	)
	reset := func() { mailed, tokens = false, nil }
	for {
		line, err := readSMTPLine(br)
		if errors.Is(err, errLineTooLong) {
			if !reply("500 5.5.2 line too long") {
				return
			}
			errs++
			continue
		}
		if err != nil {
			return
		}
		if errs >= maxBounceErrors {
			reply("421 4.7.0 too many errors, closing")
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		arg = strings.TrimSpace(arg)
		switch strings.ToUpper(verb) {
		case "EHLO":
			greeted = true
			reset()
			if !reply("250-%s\r\n250-PIPELINING\r\n250-8BITMIME\r\n250-ENHANCEDSTATUSCODES\r\n250 SIZE %d", host, s.cfg.BounceMaxBytes) {
				return
			}
		case "HELO":
			greeted = true
			reset()
			reply("250 %s", host)
		case "MAIL":
			switch {
			case !greeted:
				errs++
				reply("503 5.5.1 say EHLO or HELO first")
			case mailed:
				errs++
				reply("503 5.5.1 nested MAIL command")
			case !strings.HasPrefix(strings.ToUpper(arg), "FROM:"):
				errs++
				reply("501 5.5.4 syntax: MAIL FROM:<address>")
			default:
				if n := sizeParam(arg); n > s.cfg.BounceMaxBytes {
					reply("552 5.3.4 message size exceeds the limit of %d bytes", s.cfg.BounceMaxBytes)
					continue
				}
				mailed = true
				reply("250 2.1.0 ok")
			}
		case "RCPT":
			switch {
			case !mailed:
				errs++
				reply("503 5.5.1 need MAIL first")
			case !strings.HasPrefix(strings.ToUpper(arg), "TO:"):
				errs++
				reply("501 5.5.4 syntax: RCPT TO:<address>")
			case len(tokens) >= maxBounceRcpts:
				reply("452 4.5.3 too many recipients")
			default:
				addr, _, _ := strings.Cut(strings.TrimSpace(arg[3:]), " ")
				tok := s.verpToken(addr)
				if tok == "" {
					errs++
					reply("550 5.1.1 no such mailbox: this server accepts only bounces and complaints for messages it sent")
					continue
				}
				if _, err := messageByToken(ctx, s.d.DB, tok); err != nil {
					errs++
					reply("550 5.1.1 no such mailbox: this server accepts only bounces and complaints for messages it sent")
					continue
				}
				tokens = append(tokens, tok)
				reply("250 2.1.5 ok")
			}
		case "DATA":
			if len(tokens) == 0 {
				errs++
				reply("503 5.5.1 need RCPT first")
				continue
			}
			if !reply("354 end data with <CR><LF>.<CR><LF>") {
				return
			}
			data, tooBig, err := readData(br, s.cfg.BounceMaxBytes)
			if err != nil {
				return
			}
			toks := tokens
			reset()
			messages++
			if tooBig {
				s.m.sessions.WithLabelValues("too_large").Inc()
				reply("552 5.3.4 message size exceeds the limit of %d bytes", s.cfg.BounceMaxBytes)
				continue
			}
			reply("%s", s.acceptReport(ctx, toks, data))
			if messages >= maxBounceMessages {
				reply("421 4.7.0 enough messages on one connection, closing")
				return
			}
		case "RSET":
			reset()
			reply("250 2.0.0 ok")
		case "NOOP":
			reply("250 2.0.0 ok")
		case "VRFY":
			reply("252 2.5.2 cannot verify")
		case "QUIT":
			reply("221 2.0.0 bye")
			return
		default:
			errs++
			reply("502 5.5.2 command not recognized")
		}
	}
}

// acceptReport records a received message for each token and returns
// the SMTP reply.
func (s *Service) acceptReport(ctx context.Context, tokens []string, data []byte) string {
	rep, err := ParseReport(bytes.NewReader(data))
	if err != nil {
		s.m.sessions.WithLabelValues("refused").Inc()
		if errors.Is(err, ErrNotReport) {
			return "554 5.6.0 only delivery status notifications and feedback reports are accepted here"
		}
		return "554 5.6.0 malformed report: " + clipText(strings.Map(func(r rune) rune {
			if isControl(r) {
				return ' '
			}
			return r
		}, err.Error()), 200)
	}
	n := 0
	for _, t := range tokens {
		k, err := s.Receive(ctx, t, rep)
		if err != nil && !errors.Is(err, ErrUnknownToken) {
			s.d.Logger.Warn("mail: report not recorded", "err", err)
			return "451 4.3.0 could not record the report, try again later"
		}
		n += k
	}
	if n == 0 {
		s.m.sessions.WithLabelValues("ignored").Inc()
	} else {
		s.m.sessions.WithLabelValues("recorded").Inc()
	}
	return "250 2.0.0 report received"
}

var errLineTooLong = errors.New("mail: line too long")

// readSMTPLine reads one command line without its line ending; a longer
// line than RFC 5321 allows is consumed and reported as errLineTooLong.
func readSMTPLine(br *bufio.Reader) (string, error) {
	var buf []byte
	long := false
	for {
		frag, err := br.ReadSlice('\n')
		if !long {
			buf = append(buf, frag...)
			if len(buf) > maxSMTPLine {
				long, buf = true, nil
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return "", err
		}
		if long {
			return "", errLineTooLong
		}
		return strings.TrimRight(string(buf), "\r\n"), nil
	}
}

// readData reads a DATA body up to the lone dot, undoing dot-stuffing; past
// max bytes it keeps reading (so the session stays in step) and reports
// tooBig.
func readData(br *bufio.Reader, max int) (data []byte, tooBig bool, err error) {
	var out bytes.Buffer
	start := true // at the start of a line
	for {
		line, err := br.ReadSlice('\n')
		full := err == bufio.ErrBufferFull
		if err != nil && !full {
			return nil, false, err
		}
		if start && !full && (bytes.Equal(line, []byte(".\r\n")) || bytes.Equal(line, []byte(".\n"))) {
			return out.Bytes(), tooBig, nil
		}
		if start {
			line = bytes.TrimPrefix(line, []byte("."))
		}
		start = !full
		if tooBig {
			continue
		}
		out.Write(line)
		if out.Len() > max {
			tooBig = true
			out.Reset()
		}
	}
}

// sizeParam reads the SIZE= parameter of MAIL FROM (0 when absent).
func sizeParam(arg string) int {
	for _, f := range strings.Fields(arg) {
		if v, ok := strings.CutPrefix(strings.ToUpper(f), "SIZE="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return 0
}
