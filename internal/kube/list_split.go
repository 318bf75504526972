package kube

import (
	"strings"

	"github.com/tidwall/gjson"
)

// listParts are where a LIST answer's metadata and items are, as
// offsets into it.
type listParts struct {
	metadata span   // the list's metadata object; zero when it has none
	items    []span // each item of its items array, in order
	// seenItems: a repeated key counts once, the first, as gjson reads it.
	seenItems, seenMetadata bool
}

type span struct{ start, end int }

// splitList finds the metadata and items of a LIST answer in one pass
// over doc, which must be valid JSON (gjson.Valid): gjson would pass over
// the items twice, once to find where the array ends and once more to
// split it. The keys may come in any order (a custom resource's list
// sorts them, items before metadata). ok is false when doc is not an
// object.
func splitList(doc string) (parts listParts, ok bool) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return listParts{}, false
	}
	i++
	for {
		key, v, st := member(doc, i)
		if st != memberFound {
			return parts, true
		}
		switch {
		case key == "items" && !parts.seenItems && doc[v] == '[':
			parts.items, i = splitArray(doc, v, nil)
			parts.seenItems = true
		case key == "items":
			parts.seenItems = true
			i = valueEnd(doc, v)
		case key == "metadata" && !parts.seenMetadata:
			i = valueEnd(doc, v)
			parts.metadata = span{v, i}
			parts.seenMetadata = true
		default:
			i = valueEnd(doc, v)
		}
	}
}

// memberState is what member found.
type memberState int

const (
	memberFound memberState = iota // a key, and where its value starts
	memberNone                     // the object's end, or something that is no member
	memberShort                    // doc ends before the member's value starts
)

// member reads the object member at doc[i], which follows the object's
// '{' or the value of the member before: its key, unescaped, and the
// offset where its value starts.
func member(doc string, i int) (key string, value int, st memberState) {
	i = skipSpace(doc, i)
	if i < len(doc) && doc[i] == ',' {
		i = skipSpace(doc, i+1)
	}
	switch {
	case i >= len(doc):
		return "", 0, memberShort
	case doc[i] != '"':
		return "", 0, memberNone
	}
	keyEnd := stringEnd(doc, i)
	if keyEnd >= len(doc) {
		return "", 0, memberShort
	}
	key = doc[i+1 : keyEnd-1]
	if strings.IndexByte(key, '\\') >= 0 {
		key = gjson.Parse(doc[i:keyEnd]).String()
	}
	i = skipSpace(doc, keyEnd)
	if i < len(doc) && doc[i] == ':' {
		i = skipSpace(doc, i+1)
	}
	if i >= len(doc) {
		return "", 0, memberShort
	}
	return key, i, memberFound
}

// splitArray appends the span of each element of the array at doc[i] to
// into, and returns them with the offset past the array.
func splitArray(doc string, i int, into []span) ([]span, int) {
	i++ // past '['
	for {
		i = skipSpace(doc, i)
		switch doc[i] {
		case ']':
			return into, i + 1
		case ',':
			i = skipSpace(doc, i+1)
		}
		end := valueEnd(doc, i)
		into = append(into, span{i, end})
		i = end
	}
}

// valueEnd is the offset just past the JSON value that starts at doc[i].
func valueEnd(doc string, i int) int {
	switch doc[i] {
	case '"':
		return stringEnd(doc, i)
	case '{', '[':
		depth := 0
		for ; i < len(doc); i++ {
			switch doc[i] {
			case '"':
				i = stringEnd(doc, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(doc)
	default: // a number, true, false or null
		for ; i < len(doc); i++ {
			switch doc[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
		}
		return len(doc)
	}
}

// stringEnd is the offset just past the string whose opening quote is
// doc[i]. The bytes of a string are most of an object's, so they are
// searched for the closing quote, not walked one by one.
func stringEnd(doc string, i int) int {
	for j := i + 1; ; {
		q := strings.IndexByte(doc[j:], '"')
		if q < 0 {
			return len(doc)
		}
		j += q
		// A quote is escaped by an odd number of backslashes before it.
		b := j
		for b > i+1 && doc[b-1] == '\\' {
			b--
		}
		if (j-b)%2 == 0 {
			return j + 1
		}
		j++
	}
}

func skipSpace(doc string, i int) int {
	for i < len(doc) {
		switch doc[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// leadState is what the start of a LIST answer tells of its metadata.
type leadState int

const (
	leadUnknown leadState = iota // not yet: more of the answer is needed
	leadKnown                    // the metadata is whole in the start
	leadTooLate                  // the items come first: it is known only at the end
)

// leadingMetadata finds the list's metadata object in prefix, the start
// of a LIST answer still being read. An API server writes a built-in
// type's list as kind, apiVersion, metadata, items, and streams the
// items: the metadata, which says where the next page starts, is known
// long before the items are read. prefix need not be valid JSON; what
// is not is reported as leadTooLate, and decodePage's validation has
// the last word.
func leadingMetadata(prefix string) (string, leadState) {
	i := skipSpace(prefix, 0)
	if i >= len(prefix) {
		return "", leadUnknown
	}
	if prefix[i] != '{' {
		return "", leadTooLate
	}
	i++
	for {
		key, v, st := member(prefix, i)
		switch st {
		case memberShort:
			return "", leadUnknown
		case memberNone:
			return "", leadTooLate // the object's end, or not JSON
		}
		switch key {
		case "items":
			return "", leadTooLate
		case "metadata":
			if prefix[v] != '{' {
				return "", leadTooLate
			}
			end := valueEnd(prefix, v)
			if end >= len(prefix) {
				return "", leadUnknown
			}
			return prefix[v:end], leadKnown
		}
		if i = valueEnd(prefix, v); i >= len(prefix) {
			return "", leadUnknown
		}
	}
}
