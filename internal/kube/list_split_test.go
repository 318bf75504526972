package kube

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// gjsonParts is what gjson reads as a list's metadata and items: the
// reference splitList must agree with. Items that are no array are none
// (gjson would iterate over the one value).
func gjsonParts(doc string) (meta string, items []string) {
	list := gjson.Parse(doc)
	if !list.Get("items").IsArray() {
		return list.Get("metadata").Raw, nil
	}
	list.Get("items").ForEach(func(_, v gjson.Result) bool {
		items = append(items, v.Raw)
		return true
	})
	return list.Get("metadata").Raw, items
}

func splitParts(t testing.TB, doc string) (meta string, items []string) {
	parts, ok := splitList(doc)
	require.True(t, ok, doc)
	for _, sp := range parts.items {
		items = append(items, doc[sp.start:sp.end])
	}
	return doc[parts.metadata.start:parts.metadata.end], items
}

func TestSplitListAgreesWithGJSON(t *testing.T) {
	for _, doc := range listSplitCases {
		t.Run(doc, func(t *testing.T) {
			require.True(t, gjson.Valid(doc))
			wantMeta, wantItems := gjsonParts(doc)
			meta, items := splitParts(t, doc)
			assert.Equal(t, wantMeta, meta)
			assert.Equal(t, wantItems, items)
		})
	}
}

func TestSplitListRefusesWhatIsNoObject(t *testing.T) {
	for _, doc := range []string{`[]`, `"items"`, `  `, `null`} {
		_, ok := splitList(doc)
		assert.False(t, ok, doc)
	}
}

var listSplitCases = []string{
	`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"continue":"c"},"items":[{"a":1},{"b":[1,2,{"c":"]}"}]}]}`,
	// A custom resource's list: keys sorted, items before metadata.
	`{"apiVersion":"example.com/v1","items":[{"apiVersion":"example.com/v1","kind":"W","metadata":{"name":"a"}}],"kind":"WList","metadata":{"continue":""}}`,
	"{\n  \"metadata\" : { } ,\n  \"items\" : [ {\"x\" : \"y\"} ,\t{ } ]\n}",
	`{"metadata":{},"items":[]}`,
	`{"items":[{"s":"a \"quoted\" ] brace"},{"s":"ends in a backslash \\"},{"s":"\\\""}]}`,
	`{"items":[1,-2.5e3,true,false,null,"s",[],{}]}`,
	`{"items":null,"metadata":{"a":[{"b":"}"}]}}`,
	`{"items":[{"n":1}],"items":[{"n":2}],"metadata":{"x":1},"metadata":{"x":2}}`,
	`{"nested":{"items":[{"not":"these"}]},"items":[{"but":"these"}]}`,
	`{"\u0069tems":[{"escaped":"key"}]}`,
	`{}`,
}

// FuzzSplitList checks splitList against gjson on any valid JSON object.
func FuzzSplitList(f *testing.F) {
	for _, doc := range listSplitCases {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !gjson.Valid(doc) || !gjson.Parse(doc).IsObject() {
			return
		}
		wantMeta, wantItems := gjsonParts(doc)
		meta, items := splitParts(t, doc)
		if meta != wantMeta || len(items) != len(wantItems) {
			t.Fatalf("%s: metadata %q, items %q; gjson reads %q, %q", doc, meta, items, wantMeta, wantItems)
		}
		for i := range items {
			if items[i] != wantItems[i] {
				t.Fatalf("%s: item %d is %q; gjson reads %q", doc, i, items[i], wantItems[i])
			}
		}
	})
}

// checkLeadingMetadata reads every start of doc as an answer still being
// read: the metadata, once known, is what gjson reads whole, and stays
// known; it is never known when the items come first.
func checkLeadingMetadata(t testing.TB, doc string) (knownAt int) {
	want := gjson.Get(doc, "metadata").Raw
	knownAt = -1
	for n := 0; n <= len(doc); n++ {
		meta, state := leadingMetadata(doc[:n])
		switch {
		case state == leadKnown && meta != want:
			t.Fatalf("%s: after %d bytes the metadata is %q; gjson reads %q", doc, n, meta, want)
		case state == leadKnown && knownAt < 0:
			knownAt = n
		case state != leadKnown && knownAt >= 0:
			t.Fatalf("%s: the metadata, known after %d bytes, is not after %d", doc, knownAt, n)
		}
	}
	return knownAt
}

func TestLeadingMetadataIsKnownBeforeTheItems(t *testing.T) {
	doc := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"c2"},"items":[{"a":1},{"b":2}]}`
	knownAt := checkLeadingMetadata(t, doc)
	assert.Equal(t, strings.Index(doc, `,"items"`)+1, knownAt, "known as soon as the metadata is closed and more follows")
	meta, _ := leadingMetadata(doc[:knownAt])
	assert.Equal(t, "c2", gjson.Get(meta, "continue").String())

	for _, doc := range listSplitCases {
		checkLeadingMetadata(t, doc)
	}
	sorted := `{"apiVersion":"example.com/v1","items":[{"metadata":{"name":"a"}}],"kind":"WList","metadata":{"continue":"x"}}`
	assert.Equal(t, -1, checkLeadingMetadata(t, sorted), "items first: known only once the answer is read")
	_, state := leadingMetadata(sorted[:strings.Index(sorted, `"items":[`)+len(`"items":[`)])
	assert.Equal(t, leadTooLate, state, "and the reader is told at once")
}

func FuzzLeadingMetadata(f *testing.F) {
	for _, doc := range listSplitCases {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > 512 || !gjson.Valid(doc) {
			return
		}
		checkLeadingMetadata(t, doc)
	})
}
