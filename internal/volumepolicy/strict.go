package volumepolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// decodeStrict decodes a JSON object into v, refusing every key that is not
// exactly the name of one of v's fields. encoding/json's own unknown-field
// check matches names ignoring case, while Velero reads its YAML with case
// significant, so "StorageClass" must be refused rather than read.
func decodeStrict(data []byte, v any) error {
	if err := checkFields(data, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return describeDecodeError(err)
	}
	return nil
}

// checkFields walks the objects that decode into structs. Values of another
// shape are left to json.Unmarshal, which reports the mismatch.
func checkFields(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil
	}
	var object map[string]json.RawMessage
	if json.Unmarshal(data, &object) != nil {
		return nil
	}
	fields := jsonFields(t)
	for _, key := range slices.Sorted(maps.Keys(object)) {
		fieldType, ok := fields[key]
		if !ok {
			return fmt.Errorf("%sunknown field %q (known: %s)", pathPrefix(path), key,
				strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		}
		if err := checkFields(object[key], fieldType, joinPath(path, key)); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields maps the JSON names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	return fields
}

func describeDecodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return err
	}
	want := kindName(typeErr.Type)
	hint := ""
	if typeErr.Type.Kind() == reflect.String {
		// YAML reads yes, no, on, off and numbers as non-strings.
		hint = "; quote the value"
	}
	return fmt.Errorf("%sgot %s, want %s%s", pathPrefix(typeErr.Field), typeErr.Value, want, hint)
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	default:
		return t.Kind().String()
	}
}

func pathPrefix(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
