package rules

import (
	"strings"
	"testing"
)

func TestIsPrivateRequestPath(t *testing.T) {
	private := []string{
		// dotfiles, .env and dot-directories
		"/.env", "/.env.local", "/.env.production", "/.envrc", "/.ENV", "/.Env",
		"/.git/config", "/.git/", "/.git", "/.ssh/authorized_keys", "/.htpasswd", "/.DS_Store",
		"/app/.env", "/a/b/.npmrc", "/.aws/credentials",
		// trailing slashes, dots and spaces
		"/.env/", "/.env.", "/.env..", "/.env%20", "/.env%20%20", "/.env%2e", "/.env%2E%20",
		"/id_rsa.", "/id_rsa%20", "/key.pem.", "/key.pem%20", "/key.pem/", "/key.pem./",
		// percent-encoding, single, double and deeper, any case
		"/%2eenv", "/%2Eenv", "/%2e%65%6e%76", "/%2E%45%4E%56", "/%252eenv", "/%25252eenv",
		"/%2525252e%2525252e/.env", "/%25%32%65env", "/%2fid_rsa", "/x/%252e%252e/.env",
		"/%69%64%5f%72%73%61", "/key%2epem", "/key%252epem",
		// separators: //, /./, /../, backslashes, encoded slashes
		"//.env", "///.env", "/./.env", "/a/./.env", "/a/../.env", "/a/b/../../.env", "/../.env",
		"/../../../.env", "/a/..%2f.env", "/a%2f..%2f.env", "/a%5c..%5c.env", "\\.env", "/a\\.env",
		"/a\\..\\.env", "/a/%5c.env", "/static/..%252f.env",
		// private keys
		"/id_rsa", "/ID_RSA", "/Id_Rsa", "/keys/id_ed25519", "/id_ecdsa", "/id_dsa", "/id_rsa.pub",
		"/id_ed25519_sk", "/id_ecdsa-cert.pub", "/id_rsa.bak", "/id_rsa~", "/id_xmss",
		"/ssh_host_rsa_key", "/authorized_keys", "/known_hosts",
		"/key.pem", "/KEY.PEM", "/certs/server.key", "/cert.p12", "/cert.pfx", "/putty.ppk",
		"/AuthKey_ABC123.p8", "/keystore.jks", "/release.keystore", "/app.bks", "/vault.kdbx",
		"/client.ovpn", "/server.key.bak", "/server.pem~", "/server.pem.old", "/server.key.orig",
		"/server.KEY.BAK", "/tls.key.swp",
		// NUL bytes, control characters and cut points
		"/id_rsa%00.png", "/key.pem%00", "/a%00b", "/a%0ab", "/a%0db", "/a%09b", "/a%7fb", "/%2500",
		"/key.pem;jsessionid=1", "/key.pem::$DATA", "/id_rsa:stream", "/key.pem%3F.png",
		"/key.pem%23frag", "/key.pem%253F.png",
		// .well-known is public only at the top, and not what is under it
		"/.well-known/../.env", "/.well-known/%2e%2e/.env", "/.well-known/..%2f.env",
		"/.well-known/.env", "/.well-known/id_rsa", "/.well-known/x/.git/config",
		"/sub/.well-known/acme-challenge/x", "/.WELL-KNOWN/x", "/.well-known./x", "/.well-known%20/x",
		// invalid, overlong and IIS encodings fail closed
		"/%c0%ae%c0%aeenv", "/%c0%aeenv", "/%e0%80%aeenv", "/%u002eenv", "/%U002Eenv", "/%25u002eenv",
		"/100%", "/%", "/%zz", "/%2", "/a%g0", "/%ff", "/caf%e9.html",
		"/" + encodeTimes(".", 9) + "env", "/" + encodeTimes(".", 8) + "env", "/" + encodeTimes("x", 12),
		// look-alikes of the dot
		"/%EF%BC%8Eenv", "/\uFF0Eenv", "/\u2024env", "/%EF%B9%92git/config",
		// query and fragment are cut before checking
		"/.env?x=1", "/id_rsa#top",
	}
	public := []string{
		"", "/", "/index.html", "/a/b/c.html", "/robots.txt", "/favicon.ico",
		"/.well-known/acme-challenge/tok3n", "/.well-known/security.txt", "/.well-known/",
		"/.well-known", "/x/../.well-known/security.txt", "/.well-known/apple-app-site-association",
		"/env", "/environment.html", "/env.js", "/keynote.html", "/monkey.png", "/keys/", "/keys/index.html",
		"/api.keys.json", "/the.key.to.success.html", "/pem.html", "/pems/", "/ids/rsa.html", "/id-rsa.html",
		"/identity.html", "/my_id_rsa_talk.html", "/docs/ssh-keys.md", "/a.pub", "/cert.crt", "/backup.bak",
		"/file%20name.html", "/caf%C3%A9.html", "/%E6%97%A5%E6%9C%AC.html", "/caf\u00e9.html",
		"/100%25.html", "/a%2fb", "/a/./b", "/a//b", "/a/../b.html", "/a/b/", "/%7Euser/",
		"/search?q=/.env", "/x#/.env", "/index.html?a=%zz",
	}
	for _, p := range private {
		t.Run("private/"+p, func(t *testing.T) {
			if !IsPrivateRequestPath([]byte(p)) {
				t.Errorf("IsPrivateRequestPath(%q) = false, want true", p)
			}
		})
	}
	for _, p := range public {
		t.Run("public/"+p, func(t *testing.T) {
			if IsPrivateRequestPath([]byte(p)) {
				t.Errorf("IsPrivateRequestPath(%q) = true, want false", p)
			}
		})
	}
	t.Run("long path", func(t *testing.T) {
		long := "/" + strings.Repeat("a/", 1000)
		if IsPrivateRequestPath([]byte(long + "index.html")) {
			t.Error("long public path is private")
		}
		if !IsPrivateRequestPath([]byte(long + "%252eenv")) {
			t.Error("long path to .env is public")
		}
	})
	t.Run("input not changed", func(t *testing.T) {
		b := []byte("/%252eenv")
		IsPrivateRequestPath(b)
		if string(b) != "/%252eenv" {
			t.Errorf("input changed to %q", b)
		}
	})
}

func TestPrivateFile(t *testing.T) {
	tests := []struct {
		path   string
		reason string // "" for public
	}{
		{".env", ".env file"},
		{".env.production", ".env file"},
		{"app/.env.local", ".env file"},
		{".DS_Store", "dotfile"},
		{"assets/.gitkeep", "dotfile"},
		{".git/HEAD", "dot-directory"},
		{".github/workflows/ci.yml", "dot-directory"},
		{"keys/server.pem", "private key or key store"},
		{"server.key", "private key or key store"},
		{"certs/site.pfx", "private key or key store"},
		{"server.key.bak", "private key or key store"},
		{"ssh/id_ed25519", "SSH key or SSH file"},
		{"id_rsa.pub", "SSH key or SSH file"},
		{"authorized_keys", "SSH key or SSH file"},
		{"id_rsa ", "SSH key or SSH file"},
		{"key.pem.", "private key or key store"},
		{"a\\.env", ".env file"},
		{"a\\b\\id_rsa", "SSH key or SSH file"},
		{"../etc/passwd", "unsafe path"},
		{"a/../../b", "unsafe path"},
		{"bad\x00name", "unsafe path"},
		{"bad\nname", "unsafe path"},
		{"bad\xffname", "unsafe path"},
		{"%2eenv", ".env file"},
		{".well-known/.env", ".env file"},
		{".well-known/id_rsa", "SSH key or SSH file"},
		{"docs/.well-known/x", "dot-directory"},
		{".well-known/security.txt", ""},
		{".well-known/acme-challenge/abc", ""},
		{"/.well-known/security.txt", ""},
		{"index.html", ""},
		{"./index.html", ""},
		{"a/b/c.css", ""},
		{"100%.html", ""},
		{"the.key.to.success.html", ""},
		{"env.js", ""},
		{"café.html", ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			private, reason := PrivateFile(tc.path)
			if private != (tc.reason != "") || reason != tc.reason {
				t.Errorf("PrivateFile(%q) = %v, %q; want %q", tc.path, private, reason, tc.reason)
			}
		})
	}
}

// TestPrivateFileAgreesWithRequests checks the deploy-time and request-time
// answers agree for every file the deploy check omits or keeps.
func TestPrivateFileAgreesWithRequests(t *testing.T) {
	for _, p := range []string{".env", "a/.git/config", "k/server.pem", "id_rsa", ".well-known/x", "index.html", "a/b.css", "id_rsa.pub.bak"} {
		t.Run(p, func(t *testing.T) {
			private, _ := PrivateFile(p)
			if got := IsPrivateRequestPath([]byte("/" + p)); got != private {
				t.Errorf("PrivateFile = %v, IsPrivateRequestPath = %v", private, got)
			}
		})
	}
}

// encodeTimes percent-encodes every byte of s, then encodes the result's '%'
// n-1 more times.
func encodeTimes(s string, n int) string {
	var b strings.Builder
	for i := range len(s) {
		b.WriteString("%" + strings.ToUpper(hex2(s[i])))
	}
	out := b.String()
	for range n - 1 {
		out = strings.ReplaceAll(out, "%", "%25")
	}
	return out
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}
