package deploys

import (
	"mime"
	"net/http"
	"path"
	"strings"
)

// contentTypes are the types of common web files, fixed here so that a
// deployment answers the same on every machine (mime.TypeByExtension reads
// the host's mime.types).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
	".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
	".json": "application/json", ".map": "application/json", ".webmanifest": "application/manifest+json",
	".xml": "application/xml", ".rss": "application/rss+xml", ".atom": "application/atom+xml",
	".txt": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8", ".csv": "text/csv; charset=utf-8",
	".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".avif": "image/avif", ".ico": "image/x-icon", ".bmp": "image/bmp",
	".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf", ".otf": "font/otf",
	".mp4": "video/mp4", ".webm": "video/webm", ".mp3": "audio/mpeg", ".ogg": "audio/ogg", ".wav": "audio/wav",
	".pdf": "application/pdf", ".wasm": "application/wasm", ".zip": "application/zip", ".gz": "application/gzip",
}

// contentType returns the Content-Type of a deployed file from its name,
// falling back to sniffing its first bytes (head returns them).
func contentType(p string, head func() []byte) string {
	ext := strings.ToLower(path.Ext(p))
	if t, ok := contentTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); ext != "" && t != "" {
		return t
	}
	return http.DetectContentType(head())
}
