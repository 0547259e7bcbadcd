package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"plimsoll.dev/plimsoll/internal/revision"
)

// assets are the view's templates, script and style sheet: served from the
// binary, with nothing loaded from anywhere else.
//
//go:embed assets
var assets embed.FS

// pages renders the view's pages with html/template, which escapes every
// value for where it stands (text, attribute, URL).
type pages struct {
	t *template.Template
}

func newPages() (*pages, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"clock": func(t time.Time) string { return t.UTC().Format(timeLayout) },
		"stamp": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"lower": strings.ToLower,
		"short": revision.Short,
		"join":  strings.Join,

		printedFunc: redactValue,
	}).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("parse the web view's templates: %w", err)
	}
	redactPrinted(t)
	return &pages{t: t}, nil
}

// main renders the main part of p: what the live stream sends.
func (ps *pages) main(p page) ([]byte, error) {
	var b bytes.Buffer
	if err := ps.t.ExecuteTemplate(&b, p.Template, p); err != nil {
		return nil, fmt.Errorf("render %s: %w", p.Template, err)
	}
	return b.Bytes(), nil
}

// full renders the whole page of p around its main part.
func (ps *pages) full(p page) ([]byte, error) {
	main, err := ps.main(p)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	// main was rendered by the same escaping templates.
	err = ps.t.ExecuteTemplate(&b, "layout", struct {
		page
		MainHTML template.HTML
	}{p, template.HTML(main)}) //nolint:gosec // rendered by html/template above
	if err != nil {
		return nil, fmt.Errorf("render the page frame: %w", err)
	}
	return b.Bytes(), nil
}

// staticFiles serves the script and the style sheet.
func staticFiles() http.Handler {
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic(err) // the embedded tree has it
	}
	return http.FileServerFS(sub)
}
