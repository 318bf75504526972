package resourcemodifiers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// veleroValueJSON turns the string a document gives as a JSON Patch value
// (or a matches value) into JSON, reading it as Velero does:
//
//   - "" is the empty string;
//   - text between double quotes is that text as a string, which is how a
//     document asks for "3", "true" or "null" as strings;
//   - null is null, true and false (any case) are booleans;
//   - text starting with { or [ is a JSON object or array;
//   - a number is a number;
//   - anything else is a string.
//
// Velero pastes the text into a JSON document, so input it would turn into
// broken JSON (an object that does not parse, a number like 007 or NaN) is
// refused here rather than failing on every object the rule matches.
func veleroValueJSON(value string) (json.RawMessage, error) {
	switch {
	case value == "":
		return json.RawMessage(`""`), nil
	case len(value) >= 2 && strings.HasPrefix(value, `"`) && strings.HasSuffix(value, `"`):
		// Velero writes the inner text between quotes unescaped, so JSON
		// escapes in it work; text that is not a valid JSON string is taken
		// literally instead of producing a broken patch.
		var s string
		if err := json.Unmarshal([]byte(value), &s); err == nil {
			return json.Marshal(s)
		}
		return json.Marshal(value[1 : len(value)-1])
	case value == "null":
		return json.RawMessage(`null`), nil
	case strings.EqualFold(value, "true"):
		return json.RawMessage(`true`), nil
	case strings.EqualFold(value, "false"):
		return json.RawMessage(`false`), nil
	case strings.HasPrefix(value, "{") || strings.HasPrefix(value, "["):
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(value)); err != nil {
			return nil, fmt.Errorf("%q starts like a JSON object or array but is not valid JSON: %w", value, err)
		}
		return compact.Bytes(), nil
	}
	if _, err := strconv.ParseFloat(value, 64); err == nil {
		if !json.Valid([]byte(value)) {
			return nil, fmt.Errorf("%q reads as a number but is not a JSON number; write %q for a string", value, `"`+value+`"`)
		}
		return json.RawMessage(value), nil
	}
	return json.Marshal(value)
}
