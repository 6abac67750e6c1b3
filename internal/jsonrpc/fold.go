package jsonrpc

import "github.com/gatehouse-mcp/gatehouse/internal/strictjson"

// Member names that differ only in case are a parser differential: a
// server that decodes with a case-insensitive matcher (Go's encoding/json
// into a struct, for one, where the last match wins and Unicode simple
// folding makes "paramſ" match "params") reads a different message than the
// gateway decided. So a frame is refused when, in any object at any depth,
// two member names are equal under case folding, and when a top-level member
// name folds to a JSON-RPC member name without being it ("METHOD").

// foldKey is strictjson.Fold: the one definition of the folding.
func foldKey(name string) string { return strictjson.Fold(name) }

// foldedDuplicate is strictjson.FoldedDuplicate, which the fast path
// (scan.go) and the reference call for frames with non-ASCII names.
func foldedDuplicate(body []byte) string { return strictjson.FoldedDuplicate(body) }

// rpcMembers are the JSON-RPC 2.0 member names; a top-level member whose
// name folds to one of them must be exactly it.
var rpcMembers = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}
