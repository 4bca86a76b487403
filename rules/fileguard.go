package rules

import (
	"bytes"
	"unicode/utf8"
)

// The file guard keeps private files of a static site from being served: at
// deploy PrivateFile says which files to omit (with a log line), and at
// request time IsPrivateRequestPath says which requests to answer with 404.
// Both run the same classifier over the same normalization, so a name that is
// omitted at deploy is also refused when asked for, however it is spelled.
//
// A path is private when any of its segments is:
//   - a dotfile or dot-directory (".env", ".git", ".ssh", ".htpasswd", ...),
//     except ".well-known" at the top level, which stays public (the files
//     under it are still checked);
//   - an SSH key or SSH file: id_rsa, id_dsa, id_ecdsa, id_ed25519, id_xmss
//     and every name starting with one of them (id_rsa.pub, id_ed25519_sk,
//     id_rsa.bak, ...), ssh_host_*, authorized_keys, known_hosts;
//   - a private key or key store by extension: .pem .key .p12 .pfx .ppk .p8
//     .pk8 .pkcs8 .pkcs12 .jks .jceks .keystore .bks .pvk .snk .kdbx .ovpn,
//     also under a backup extension (.bak .backup .old .orig .save .sav .swp
//     .swo .tmp .copy) or a trailing "~";
//   - unsafe: "..", a control character or NUL, invalid UTF-8 (which covers
//     overlong encodings such as %c0%ae).
//
// Segments are split at '/' and '\'. Before a name is checked, trailing dots
// and spaces are dropped (".env." and "id_rsa " are what Windows would open),
// and the name is also checked cut at ';', ':', '?' and '#' (path
// parameters, NTFS streams, and what a second decoder would take for a query).
// Names are compared without regard to ASCII case. A segment that starts with
// a look-alike of '.' (U+FF0E, U+2024, U+FE52) counts as a dotfile.

// privateReason says why a path is private; 0 means public.
type privateReason uint8

const (
	public privateReason = iota
	reasonDotfile
	reasonDotDir
	reasonEnv
	reasonSSH
	reasonKey
	reasonUnsafe
)

var reasonText = [...]string{
	public:        "",
	reasonDotfile: "dotfile",
	reasonDotDir:  "dot-directory",
	reasonEnv:     ".env file",
	reasonSSH:     "SSH key or SSH file",
	reasonKey:     "private key or key store",
	reasonUnsafe:  "unsafe path",
}

// maxDecodeRounds is how many times a request path is percent-decoded,
// looking for a private name after each round; a path still holding escapes
// after that is treated as private.
const maxDecodeRounds = 8

// PrivateFile reports whether the deployed file at path (relative to the site
// root, '/' or '\' separated) is private and must be left out of the
// deployment, and a short reason for the log line ("dotfile", ".env file",
// "private key or key store", ...). A name holding percent-escapes is also
// checked decoded, as IsPrivateRequestPath would see it.
func PrivateFile(path string) (private bool, reason string) {
	r := classify([]byte(path), false)
	return r != public, reasonText[r]
}

// IsPrivateRequestPath reports whether a request for the raw request path
// (as sent, before any decoding; a query or fragment is cut off) names a
// private file, so the edge answers 404. It decodes percent-escapes up to
// eight times (double and deeper encodings), resolving "//", "/./" and "/../"
// and checking every segment after each round. It fails closed: a path that
// does not decode cleanly (a stray '%' in the raw path, an IIS "%uXXXX"
// escape, invalid UTF-8 or an overlong encoding, a control character or NUL,
// more than eight rounds) is private. It does not allocate for paths up to
// 1 KiB and does not keep rawPath.
func IsPrivateRequestPath(rawPath []byte) bool {
	for i, c := range rawPath {
		if c == '?' || c == '#' {
			rawPath = rawPath[:i]
			break
		}
	}
	return classify(rawPath, true) != public
}

// classify checks p and each of its percent-decoded forms. For a request
// (strict), a '%' in p that does not start an escape is unsafe.
func classify(p []byte, request bool) privateReason {
	if r := classifyPath(p, request); r != public {
		return r
	}
	esc, ok := scanEscapes(p, request)
	switch {
	case !ok:
		return reasonUnsafe
	case !esc:
		return public
	}
	return classifyDecoded(p, request)
}

// classifyDecoded decodes p round by round into a buffer of its own, checking
// each round. It is apart from classify so that paths without escapes do
// not pay for zeroing the buffer.
func classifyDecoded(p []byte, request bool) privateReason {
	var stack [1024]byte
	var buf []byte
	if len(p) <= len(stack) {
		buf = stack[:len(p)]
	} else {
		buf = make([]byte, len(p))
	}
	copy(buf, p)
	p = buf
	for range maxDecodeRounds {
		p = unescapeInPlace(p)
		if r := classifyPath(p, request); r != public {
			return r
		}
		esc, ok := scanEscapes(p, false)
		switch {
		case !ok:
			return reasonUnsafe
		case !esc:
			return public
		}
	}
	return reasonUnsafe
}

// scanEscapes reports whether p holds a %XX escape, and !ok when it holds an
// IIS-style %uXXXX escape, or (strict) any '%' that does not start a %XX
// escape.
func scanEscapes(p []byte, strict bool) (esc, ok bool) {
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			continue
		}
		if i+2 < len(p) && unhex(p[i+1]) < 16 && unhex(p[i+2]) < 16 {
			esc = true
			continue
		}
		if i+1 < len(p) && (p[i+1] == 'u' || p[i+1] == 'U') {
			return esc, false
		}
		if strict {
			return esc, false
		}
	}
	return esc, true
}

// unescapeInPlace decodes every %XX escape of p into p and returns the
// shortened slice; other '%' bytes stay as they are.
func unescapeInPlace(p []byte) []byte {
	w := 0
	for r := 0; r < len(p); r++ {
		c := p[r]
		if c == '%' && r+2 < len(p) {
			if h, l := unhex(p[r+1]), unhex(p[r+2]); h < 16 && l < 16 {
				c = h<<4 | l
				r += 2
			}
		}
		p[w] = c
		w++
	}
	return p[:w]
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 255
}

// classifyPath checks one (decoded or raw) form of a path segment by segment.
// ".." moves up (above the root it stays at the root, as servers do) for a
// request, and is unsafe in a deployed file's path.
func classifyPath(p []byte, request bool) privateReason {
	ascii := true
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return reasonUnsafe
		}
		ascii = ascii && c < 0x80
	}
	if !ascii && !utf8.Valid(p) {
		return reasonUnsafe
	}
	depth := 0
	for i := 0; i <= len(p); {
		j := i
		for j < len(p) && p[j] != '/' && p[j] != '\\' {
			j++
		}
		seg := p[i:j]
		last := j >= len(p)-1
		i = j + 1
		switch {
		case len(seg) == 0 || (len(seg) == 1 && seg[0] == '.'):
			continue
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			if !request {
				return reasonUnsafe
			}
			if depth > 0 {
				depth--
			}
			continue
		}
		if r := classifySegment(seg, depth, last); r != public {
			return r
		}
		depth++
	}
	return public
}

// dotLookalikes are UTF-8 forms of characters some systems fold to '.'.
var dotLookalikes = [...]string{"\uFF0E", "\u2024", "\uFE52"}

// classifySegment checks one path segment; depth 0 is the top level.
func classifySegment(seg []byte, depth int, last bool) privateReason {
	dot := seg[0] == '.'
	if seg[0] >= 0x80 {
		for _, l := range dotLookalikes {
			dot = dot || bytes.HasPrefix(seg, []byte(l))
		}
	}
	if dot {
		if depth == 0 && string(seg) == ".well-known" {
			return public
		}
		if hasPrefixLower(seg, ".env") {
			return reasonEnv
		}
		if last {
			return reasonDotfile
		}
		return reasonDotDir
	}
	name := trimName(seg)
	if r := classifyName(name); r != public {
		return r
	}
	for k, c := range name {
		if c == ';' || c == ':' || c == '?' || c == '#' {
			return classifyName(trimName(name[:k]))
		}
	}
	return public
}

// trimName drops trailing dots, spaces and '~' (Windows opens "id_rsa. " as
// "id_rsa"; editors leave "key.pem~").
func trimName(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case '.', ' ', '~':
			b = b[:len(b)-1]
			continue
		}
		break
	}
	return b
}

// sshPrefixes are names that are SSH keys with any suffix.
var sshPrefixes = [...]string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_xmss", "ssh_host_"}

// sshNames are SSH files matched whole.
var sshNames = [...]string{"authorized_keys", "authorized_keys2", "known_hosts", "known_hosts2", "identity"}

// extKind classifies a lower-case extension: a private key or key store, a
// backup extension that hides the one before it, or neither.
func extKind(ext string) privateReason {
	switch ext {
	case "pem", "key", "p12", "pfx", "ppk", "p8", "pk8", "pkcs8", "pkcs12",
		"jks", "jceks", "keystore", "bks", "pvk", "snk", "kdbx", "ovpn":
		return reasonKey
	case "bak", "backup", "old", "orig", "save", "sav", "swp", "swo", "tmp", "copy":
		return reasonBackupExt
	}
	return public
}

// reasonBackupExt marks a backup extension inside extKind; it is never
// returned as a verdict.
const reasonBackupExt privateReason = 255

// classifyName checks a trimmed file or directory name that does not start
// with a dot.
func classifyName(name []byte) privateReason {
	if len(name) == 0 {
		return public
	}
	switch lower(name[0]) {
	case '.':
		return reasonDotfile // reached when a cut name starts with a dot
	case 'i', 's', 'a', 'k':
		for _, p := range sshPrefixes {
			if hasPrefixLower(name, p) {
				return reasonSSH
			}
		}
		for _, n := range sshNames {
			if equalLower(name, n) {
				return reasonSSH
			}
		}
	}
	// Check the last extension, and the one before it when the last is a
	// backup extension.
	for range 2 {
		dot := bytes.LastIndexByte(name, '.')
		if dot < 0 {
			return public
		}
		ext := trimName(name[dot+1:])
		var buf [8]byte
		if len(ext) > len(buf) {
			return public
		}
		for i, c := range ext {
			buf[i] = lower(c)
		}
		switch extKind(string(buf[:len(ext)])) {
		case reasonKey:
			return reasonKey
		case public:
			return public
		}
		name = trimName(name[:dot])
	}
	return public
}

// hasPrefixLower reports whether b starts with low, ignoring ASCII case.
func hasPrefixLower(b []byte, low string) bool {
	return len(b) >= len(low) && equalLower(b[:len(low)], low)
}
