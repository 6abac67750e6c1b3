package inspect

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema errors; callers branch with errors.Is.
var (
	// ErrSchema: the schema is not a JSON Schema that resolves (draft
	// 2020-12 or draft-07; no remote $ref).
	ErrSchema = errors.New("inspect: invalid output schema")
	// ErrSchemaMismatch: the value does not validate against the schema.
	ErrSchemaMismatch = errors.New("inspect: value does not validate against the output schema")
)

// CheckSchema resolves schema, a tool's outputSchema (JSON Schema,
// draft 2020-12 or draft-07, with github.com/google/jsonschema-go; remote
// references are not loaded), and validates value (JSON, typically a
// redacted structuredContent) against it. It returns nil when value is
// valid; an error wrapping ErrSchema when schema is not valid JSON or
// does not resolve; one wrapping ErrSyntax when value is not JSON; one
// wrapping ErrSchemaMismatch when value is not valid. A mismatch error
// never contains the value or the validator's message (which quotes the
// value): only that it failed.
func CheckSchema(schema, value []byte) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("%w: %w", ErrSchema, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSchema, err)
	}
	var v any
	if err := json.Unmarshal(value, &v); err != nil {
		return fmt.Errorf("inspect: check schema: %w", ErrSyntax)
	}
	if err := rs.Validate(v); err != nil {
		return fmt.Errorf("inspect: check schema: %w", ErrSchemaMismatch)
	}
	return nil
}
