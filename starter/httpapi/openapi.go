package httpapi

import (
	"encoding"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

var pathParam = regexp.MustCompile(`\{([a-z]+)\}`)

// OpenAPI is the starter API's OpenAPI 3 document, as GET /openapi.json
// serves it.
func OpenAPI() ([]byte, error) {
	return openAPIDocument(newHandler(nil, nil).routes())
}

// openAPIDocument describes routes; request and reply schemas come from
// the Go types by reflection, named ones as components.
func openAPIDocument(routes []route) ([]byte, error) {
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{Title: "cairn starter API", Version: "v1",
			Description: "Start, inspect and cancel cairn's backups, restores, schedules and etcd snapshots. " +
				"Errors are JSON with a type; unknown fields in a body are refused."},
		Paths: openapi3.NewPaths(),
		Components: &openapi3.Components{Schemas: openapi3.Schemas{}, SecuritySchemes: openapi3.SecuritySchemes{
			"bearer": &openapi3.SecuritySchemeRef{Value: openapi3.NewJWTSecurityScheme().WithBearerFormat("").
				WithDescription("a token the cluster accepts (TokenReview), e.g. from `kubectl create token`; cairn dev's is in <data-dir>/api-token")},
		}},
		Security: openapi3.SecurityRequirements{openapi3.NewSecurityRequirement().Authenticate("bearer")},
	}
	text := map[string]bool{}
	gen := openapi3gen.NewGenerator(openapi3gen.SchemaCustomizer(textSchemas(text)),
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true}),
		openapi3gen.CreateTypeNameGenerator(func(t reflect.Type) string { return t.Name() }))
	schema := func(t reflect.Type) (*openapi3.SchemaRef, error) {
		ref, err := gen.NewSchemaRefForValue(reflect.New(t).Elem().Interface(), doc.Components.Schemas)
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t, err)
		}
		return ref, nil
	}
	errSchema, err := schema(reflect.TypeFor[errorBody]())
	if err != nil {
		return nil, err
	}
	doc.Components.Schemas["Error"] = errSchema
	errRef := openapi3.NewSchemaRef("#/components/schemas/Error", nil)
	for _, r := range routes {
		method, path, _ := strings.Cut(r.pattern, " ")
		op := &openapi3.Operation{Summary: r.summary, OperationID: operationID(method, path), Responses: openapi3.NewResponses()}
		for _, name := range pathParam.FindAllStringSubmatch(path, -1) {
			op.AddParameter(openapi3.NewPathParameter(name[1]).WithSchema(openapi3.NewStringSchema()))
		}
		for _, q := range sortedKeys(r.query) {
			op.AddParameter(openapi3.NewQueryParameter(q).WithDescription(r.query[q]).WithSchema(openapi3.NewStringSchema()))
		}
		if r.body != nil {
			ref, err := schema(r.body)
			if err != nil {
				return nil, err
			}
			op.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithJSONSchemaRef(ref)}
		}
		for _, status := range sortedKeys(r.success) {
			resp := openapi3.NewResponse().WithDescription(r.success[status])
			switch {
			case r.reply != nil:
				ref, err := schema(r.reply)
				if err != nil {
					return nil, err
				}
				resp.WithJSONSchemaRef(ref)
			case r.media != "":
				resp.WithContent(openapi3.NewContentWithSchema(openapi3.NewStringSchema(), []string{r.media}))
			}
			op.AddResponse(status, resp)
		}
		failures := merge(r.failures, map[int]string{
			http.StatusUnauthorized:        "no bearer token, or one the cluster does not accept",
			http.StatusForbidden:           "the token's user may not do this (RBAC on " + v1alpha1.APIGroup + "), or a cross-site request",
			http.StatusInternalServerError: "an error a retry may fix",
			http.StatusServiceUnavailable:  "Temporal is not reachable",
		})
		for _, status := range sortedKeys(failures) {
			op.AddResponse(status, openapi3.NewResponse().WithDescription(failures[status]).WithJSONSchemaRef(errRef))
		}
		doc.AddOperation(path, method, op)
	}
	inlineTextSchemas(doc, text)
	return json.MarshalIndent(doc, "", "  ")
}

// textSchemas gives a type that writes itself as JSON text (a duration, a
// time, a quantity) the schema of a string instead of its Go fields, and
// records its name in text.
func textSchemas(text map[string]bool) openapi3gen.SchemaCustomizerFn {
	return func(_ string, t reflect.Type, _ reflect.StructTag, s *openapi3.Schema) error {
		if t == reflect.TypeFor[time.Time]() {
			return nil
		}
		pt := reflect.PointerTo(t)
		if t.Kind() == reflect.Struct && (pt.Implements(reflect.TypeFor[json.Marshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextMarshaler]())) {
			*s = *openapi3.NewStringSchema()
			text[t.Name()] = true
		}
		return nil
	}
}

// inlineTextSchemas replaces the references the generator left to the
// text types (it exports only components with properties) with string
// schemas.
func inlineTextSchemas(doc *openapi3.T, text map[string]bool) {
	var fix func(ref *openapi3.SchemaRef)
	fix = func(ref *openapi3.SchemaRef) {
		if ref == nil {
			return
		}
		if name, ok := strings.CutPrefix(ref.Ref, "#/components/schemas/"); ok {
			if doc.Components.Schemas[name] == nil && text[name] {
				ref.Ref, ref.Value = "", openapi3.NewStringSchema()
			}
			return
		}
		if ref.Value == nil {
			return
		}
		for _, p := range ref.Value.Properties {
			fix(p)
		}
		fix(ref.Value.Items)
		fix(ref.Value.AdditionalProperties.Schema)
	}
	for _, s := range doc.Components.Schemas {
		fix(s)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody != nil {
				for _, mt := range op.RequestBody.Value.Content {
					fix(mt.Schema)
				}
			}
			for _, resp := range op.Responses.Map() {
				for _, mt := range resp.Value.Content {
					fix(mt.Schema)
				}
			}
		}
	}
}

// operationID reads like "getBackupsName" for GET /v1/backups/{name}.
func operationID(method, path string) string {
	id := strings.ToLower(method)
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '-' || r == '.' }) {
		part = strings.Trim(part, "{}")
		if part == "v1" || part == "" {
			continue
		}
		id += strings.ToUpper(part[:1]) + part[1:]
	}
	return id
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// openAPI serves the document.
func (h *handler) openAPI(w http.ResponseWriter, _ *http.Request) {
	if h.docErr != nil {
		h.reply(w, http.StatusInternalServerError, errorBody{Error: h.docErr.Error(), Type: "Internal"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(h.doc)))
	_, _ = w.Write(h.doc)
}
