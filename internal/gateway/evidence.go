package gateway

import (
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// CodeWithheld answers a tools/call whose response the gateway withheld
// (for example a server receipt that does not meet receipts.require).
const CodeWithheld = -32082

// Evidence receives every tools/call decision and the outcome of every
// forwarded call; package audit implements it with server receipts,
// gateway decision receipts and the audit ledger (evidence.md §1).
//
// Decided runs on the client relay goroutine after the decision event was
// written. It records (queues) the decision's evidence and returns a wait
// function; the gateway forwards or answers the call only after wait
// returns nil, on a goroutine of its own, so that the client relay can go
// on reading (and the evidence of concurrent calls shares durable writes).
// A non-nil error from wait means the evidence could not be recorded: an
// allowed call is then refused unless the policy says on_log_failure:
// fail_open.
//
// Responded runs on the server relay goroutine with the server's response
// to a forwarded call. It returns a wait function; the response is relayed
// after wait returns, or replaced by a CodeWithheld error carrying reason
// when wait reports withhold. Implementations must be safe for concurrent
// use; every wait function is called exactly once.
type Evidence interface {
	Decided(c *Call) (wait func() error)
	Responded(c *Call, resp *jsonrpc.Message) (wait func() (withhold bool, reason string))
}

// Call is one tools/call as the evidence recorder sees it. Byte slices are
// only valid during the Decided call that receives them.
type Call struct {
	// Name is the tool name from params.name.
	Name string
	// Tool is the tool's definition as listed; zero when Known is false.
	Tool  mcp.Tool
	Known bool
	// ServerID and Principal are the run's configuration.
	ServerID  string
	Principal policy.Principal
	// ID is the JSON-RPC id (absent for a tools/call notification).
	ID jsonrpc.ID
	// Arguments and Meta are the raw params.arguments and params._meta,
	// nil when absent.
	Arguments []byte
	Meta      []byte
	// ToolCallID and its strength come from the decision (request-receipts
	// §7).
	ToolCallID, ToolCallIDStrength string
	// Decision is the policy decision; Forwarded whether the call goes to
	// the server.
	Decision  policy.Decision
	Forwarded bool
	// DecisionEventID is the id of the decision-log event, "" without a
	// decision log.
	DecisionEventID string
	// Received is when the gateway read the request.
	Received time.Time
	// State belongs to the Evidence implementation (hashes computed in
	// Decided, ids to link the outcome to).
	State any
}

// PolicyTool returns the call's tool as policy conditions see it (CEL
// variable `tool`): name, title, description and annotations of the listed
// definition, and its side effect when Known (destructive otherwise).
func (c *Call) PolicyTool() policy.Tool { return policyTool(c.Name, c.Tool, c.Known) }

// policyTool is the CEL variable `tool` of a call to name whose listed
// definition is tool (zero unless known).
func policyTool(name string, tool mcp.Tool, known bool) policy.Tool {
	return policy.Tool{Name: name, Known: known, Title: tool.Title, Description: tool.Description,
		Annotations: tool.Annotations.Map(), SideEffect: toolSideEffect(tool, known)}
}

// toolSideEffect is the side effect of a call to tool (evidence.md §4):
// what its annotations declare when the gateway saw it listed (known),
// destructive otherwise.
func toolSideEffect(tool mcp.Tool, known bool) string {
	if !known {
		return mcp.SideEffectDestructive
	}
	return tool.Annotations.SideEffect()
}
