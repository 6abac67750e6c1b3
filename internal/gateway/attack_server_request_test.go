package gateway

import (
	"strings"
	"testing"
	"time"
)

// TestRefusedServerRequestIsAnswered: a server request that fails the
// strict parse but whose id can be read (here a duplicated member) is
// dropped without an answer, so the server waits for its response forever.
// The same request over the frame limit is answered with an error
// (serverOversized), and a refused client request is answered too: a
// refused server request should get a JSON-RPC error addressed to its id.
func TestRefusedServerRequestIsAnswered(t *testing.T) {
	r := newRig(t, Config{Policy: readonlyPolicy(t, "")})
	r.serve(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"maxTokens":5,"maxTokens":6}}`)
	r.noRecv(100 * time.Millisecond) // nothing reaches the client
	// Sync: the gateway has handled the frame once a later ping is through.
	r.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	got := r.got()
	if !strings.Contains(got, `"id":"s1"`) {
		t.Fatalf("the server got %s first; want an error answering its request \"s1\"", got)
	}
}
