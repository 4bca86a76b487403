// Package listener is the edge's connection plumbing below HTTP: the
// per-address connection cap (PerIP), deadlines that move the runtime's
// timers rarely (DeadlineConn), lingering close (LingerOnClose), and the
// TLS listener that hands each connection to the server of the protocol
// ALPN chose (TLSMux).
package listener
