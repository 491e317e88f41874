// Package apiclient is a client of the admin API generated from
// handlers/openapi.json by oapi-codegen (pinned below); the e2e tests drive
// a replay and an acknowledge with it, and TestGeneratedClientIsCurrent
// fails when the document changed and it was not regenerated.
package apiclient

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../handlers/openapi.json
