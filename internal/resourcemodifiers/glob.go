package resourcemodifiers

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// maxGlobNesting bounds {…} nesting, which the translation follows by
// recursion.
const maxGlobNesting = 32

// compileGlob turns a pattern in the glob syntax Velero uses for
// groupResource and namespaces (github.com/gobwas/glob) into an anchored
// regexp: "*" is any run of characters except separator, "**" any run at
// all, "?" one character except separator, "[abc]", "[a-z]", "[!abc]" and
// "[!a-z]" a character (separators included), "{a,b}" either alternative,
// and "\" quotes the next character. separator 0 means none.
func compileGlob(pattern string, separator rune) (*regexp.Regexp, error) {
	g := globTranslator{pattern: []rune(pattern), oneChar: "."}
	if separator != 0 {
		g.oneChar = "[^" + quoteClassRune(separator) + "]"
	}
	var expr strings.Builder
	expr.WriteString("^(?s:")
	if err := g.sequence(&expr, 0); err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	expr.WriteString(")$")
	re, err := regexp.Compile(expr.String())
	if err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	return re, nil
}

type globTranslator struct {
	pattern []rune
	pos     int
	oneChar string // regexp for one character a wildcard may stand for
}

func (g *globTranslator) peek(offset int) (rune, bool) {
	if g.pos+offset >= len(g.pattern) {
		return 0, false
	}
	return g.pattern[g.pos+offset], true
}

// sequence translates up to the end of the pattern or, inside braces
// (depth > 0), up to the "," or "}" that ends the alternative.
func (g *globTranslator) sequence(expr *strings.Builder, depth int) error {
	for g.pos < len(g.pattern) {
		r := g.pattern[g.pos]
		switch {
		case depth > 0 && (r == ',' || r == '}'):
			return nil
		case r == '*':
			g.pos++
			if next, ok := g.peek(0); ok && next == '*' {
				g.pos++
				expr.WriteString(".*")
			} else {
				expr.WriteString(g.oneChar + "*")
			}
		case r == '?':
			g.pos++
			expr.WriteString(g.oneChar)
		case r == '[':
			if err := g.class(expr); err != nil {
				return err
			}
		case r == '{':
			if err := g.alternatives(expr, depth+1); err != nil {
				return err
			}
		case r == '\\':
			// A trailing backslash quotes nothing and is dropped, as gobwas does.
			g.pos++
			if next, ok := g.peek(0); ok {
				g.pos++
				expr.WriteString(regexp.QuoteMeta(string(next)))
			}
		default:
			g.pos++
			expr.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return nil
}

func (g *globTranslator) alternatives(expr *strings.Builder, depth int) error {
	if depth > maxGlobNesting {
		return fmt.Errorf("more than %d nested {", maxGlobNesting)
	}
	g.pos++ // {
	expr.WriteString("(?:")
	for {
		if err := g.sequence(expr, depth); err != nil {
			return err
		}
		r, ok := g.peek(0)
		if !ok {
			return errors.New("unterminated {")
		}
		g.pos++
		if r == '}' {
			expr.WriteString(")")
			return nil
		}
		expr.WriteString("|") // r is ','
	}
}

// class translates a bracket expression: one range ("a-z") or a list of
// characters, either one negated by a leading "!".
func (g *globTranslator) class(expr *strings.Builder) error {
	g.pos++ // [
	negate := false
	if r, ok := g.peek(0); ok && r == '!' {
		negate = true
		g.pos++
	}
	var members strings.Builder
	if dash, ok := g.peek(1); ok && dash == '-' {
		lo, _ := g.peek(0)
		hi, ok := g.peek(2)
		if !ok {
			return errors.New("unterminated [")
		}
		if lo > hi {
			return fmt.Errorf("range %c-%c is reversed", lo, hi)
		}
		g.pos += 3
		members.WriteString(quoteClassRune(lo) + "-" + quoteClassRune(hi))
	} else {
		for {
			r, ok := g.peek(0)
			if !ok || r == ']' {
				break
			}
			g.pos++
			if r == '\\' {
				if r, ok = g.peek(0); !ok {
					break
				}
				g.pos++
			}
			members.WriteString(quoteClassRune(r))
		}
	}
	if r, ok := g.peek(0); !ok || r != ']' {
		return errors.New("unterminated [")
	}
	g.pos++
	if members.Len() == 0 {
		return errors.New("empty []")
	}
	expr.WriteString("[")
	if negate {
		expr.WriteString("^")
	}
	expr.WriteString(members.String() + "]")
	return nil
}

// quoteClassRune writes r so that it stands for itself inside a regexp
// character class.
func quoteClassRune(r rune) string {
	if strings.ContainsRune(`\][^-`, r) {
		return `\` + string(r)
	}
	return string(r)
}
