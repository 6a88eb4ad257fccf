package mail

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlToText reduces an HTML body to readable text for the triage: tags go,
// script, style and head content goes, entities are decoded, and block
// elements and <br> become line breaks. It is deliberately simple (no
// tables, no link targets): the operator reads the answer of a DSO, not a
// newsletter.
func htmlToText(src string) string {
	z := html.NewTokenizer(strings.NewReader(src))
	var sb strings.Builder
	skip := 0 // depth inside script, style, head, title
	// brk is the line break owed before the next text: 1 after a block
	// element, 2 (an empty line) after a paragraph. Owing instead of writing
	// keeps </li><li> from becoming two breaks.
	brk := 0
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return tidyText(sb.String())
		case html.TextToken:
			if skip > 0 {
				continue
			}
			text := collapseSpace(z.Text())
			if brk > 0 {
				if len(strings.TrimSpace(string(text))) == 0 {
					continue
				}
				if sb.Len() > 0 {
					sb.WriteString(strings.Repeat("\n", brk))
				}
				brk = 0
			}
			sb.Write(text)
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if a == atom.Body {
				// An unclosed <head> must not swallow the body.
				skip = 0
				continue
			}
			if dropped(a) {
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
				continue
			}
			if skip > 0 {
				continue
			}
			switch {
			case a == atom.Br:
				sb.WriteString(strings.Repeat("\n", brk) + "\n")
				brk = 0
			case a == atom.P:
				brk = max(brk, 2)
			case block(a):
				brk = max(brk, 1)
			}
		}
	}
}

// dropped elements contain no text for the reader.
func dropped(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Head, atom.Title, atom.Noscript, atom.Template:
		return true
	}
	return false
}

// block elements start a new line.
func block(a atom.Atom) bool {
	switch a {
	case atom.Div, atom.Tr, atom.Li, atom.Ul, atom.Ol, atom.Table, atom.Blockquote, atom.Pre,
		atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Hr, atom.Dt, atom.Dd:
		return true
	}
	return false
}

// collapseSpace applies HTML's white-space rule: any run of spaces, tabs and
// line breaks in text shows as one space. &nbsp; counts as a space here.
func collapseSpace(b []byte) []byte {
	out := make([]byte, 0, len(b))
	space := false
	for _, r := range string(b) {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\u00a0' {
			space = true
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, string(r)...)
	}
	if space {
		out = append(out, ' ')
	}
	return out
}

var manyBreaks = regexp.MustCompile(`\n{3,}`)

// tidyText trims the spaces that collapsing left at line starts and ends and
// keeps at most one empty line between paragraphs.
func tidyText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.TrimSpace(manyBreaks.ReplaceAllString(strings.Join(lines, "\n"), "\n\n"))
}
