// Package httpapi is cairn's HTTP starter API: its routes (routes.go is
// the one table of them), their handlers, the OpenAPI document made from
// that table, and who may call what: a Kubernetes token reviewed by the
// cluster (TokenReview, SubjectAccessReview, as the API server's own
// webhooks do) or `cairn dev`'s one token. What a route does it asks of
// the starter library (package starter), which the CLI calls too.
package httpapi
