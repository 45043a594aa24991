package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Pages are the paths of the dashboard's pages; a path under one that ends
// in "/" (a run, a rule) is that page with an argument.
var Pages = []string{"/", "/matrix", "/runs", "/runs/", "/rules", "/rules/", "/deadletters", "/subscriptions"}

// Options configure the handler.
type Options struct {
	// Title names the dashboard in the browser tab and the header
	// (default "ponens").
	Title string
}

// Handler serves the dashboard: the page shell for every page path, the
// embedded assets under /assets/, and a "not found" page for anything
// else. It answers GET and HEAD only.
type Handler struct {
	shell  []byte
	static map[string]asset // by path under /assets/
}

// asset is an embedded file with its content type and entity tag.
type asset struct {
	data  []byte
	ctype string
	etag  string
}

// New returns the dashboard's handler.
func New(o Options) *Handler {
	if o.Title == "" {
		o.Title = "ponens"
	}
	shell, err := assets.ReadFile("assets/index.html")
	if err != nil { // the file is embedded: this cannot happen in a built binary
		panic("dashboard: assets/index.html is not embedded: " + err.Error())
	}
	shell = bytes.ReplaceAll(shell, []byte("{{title}}"), []byte(htmlEscape(o.Title)))
	h := &Handler{shell: shell, static: map[string]asset{}}
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "assets/index.html" {
			return err
		}
		data, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		h.static[strings.TrimPrefix(p, "assets/")] = asset{data: data, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "dashboard: method "+r.Method+" not allowed (GET or HEAD)", http.StatusMethodNotAllowed)
		return
	}
	setSecurityHeaders(w.Header())
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/assets/"); ok {
		a, found := h.static[rest]
		if !found {
			http.Error(w, "dashboard: no asset "+p, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", a.ctype)
		w.Header().Set("Cache-Control", "no-cache") // revalidated by its entity tag
		w.Header().Set("ETag", a.etag)
		http.ServeContent(w, r, rest, time.Time{}, bytes.NewReader(a.data))
		return
	}
	status := http.StatusOK
	if !IsPage(p) {
		status = http.StatusNotFound // the shell says so too, and links home
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write(h.shell)
	}
}

// IsPage reports whether p is the path of a dashboard page.
func IsPage(p string) bool {
	for _, page := range Pages {
		if strings.HasSuffix(page, "/") && page != "/" {
			if rest, ok := strings.CutPrefix(p, page); ok && rest != "" {
				return true
			}
			continue
		}
		if p == page {
			return true
		}
	}
	return false
}

// setSecurityHeaders forbids everything the pages do not need: scripts,
// styles and fetches from elsewhere, inline script, framing.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

func htmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")
	return r.Replace(s)
}
