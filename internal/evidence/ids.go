package evidence

import (
	"crypto/rand"
	"time"
)

// Identifier prefixes.
const (
	// PrefixGatewayDecision starts every gateway_decision_id.
	PrefixGatewayDecision = "gw_dec_"
	// PrefixAuditEvent starts every audit_event_id.
	PrefixAuditEvent = "audit_"
	// PrefixSynthesizedReceipt starts the receipt_id of a receipt the
	// gateway synthesized ([Synthesize]).
	PrefixSynthesizedReceipt = "mcp_rcpt_gw_"
	// PrefixUnnamedReceipt starts the id under which the gateway stores
	// and references a server receipt whose own receipt_id is missing or
	// unusable as a ledger record id ([NewUnnamedReceiptID]).
	PrefixUnnamedReceipt = "mcp_rcpt_unnamed_"
)

// NewGatewayDecisionID returns a new gateway_decision_id: "gw_dec_" and a
// ULID (26 Crockford base32 characters: a 48-bit millisecond timestamp,
// then 80 random bits), for example "gw_dec_01JW3Q9Z6M8X2V4N7K5T0R1C3B".
// IDs of one prefix sort by creation time to the millisecond. Safe for
// concurrent use.
func NewGatewayDecisionID() string { return PrefixGatewayDecision + newULID(time.Now()) }

// NewAuditEventID returns a new audit_event_id: "audit_" and a ULID (see
// [NewGatewayDecisionID]).
func NewAuditEventID() string { return PrefixAuditEvent + newULID(time.Now()) }

// NewUnnamedReceiptID returns "mcp_rcpt_unnamed_" and a ULID (see
// [NewGatewayDecisionID]): the record id of a server receipt that carries
// no usable receipt_id, so that it is still stored, referenced by the
// gateway decision's server_receipt_id and walkable in the lineage. The
// receipt itself is stored unchanged.
func NewUnnamedReceiptID() string { return PrefixUnnamedReceipt + newULID(time.Now()) }

// newSynthesizedReceiptID returns "mcp_rcpt_gw_" and a ULID for t.
func newSynthesizedReceiptID(t time.Time) string { return PrefixSynthesizedReceipt + newULID(t) }

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newULID returns a ULID for t with 80 bits from crypto/rand.
func newULID(t time.Time) string {
	var b [16]byte
	ms := uint64(t.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	rand.Read(b[6:]) // never fails (crypto/rand, Go 1.24+)
	// 128 bits as 26 base32 digits, the first carrying 3 bits.
	var out [26]byte
	hi := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	lo := uint64(b[8])<<56 | uint64(b[9])<<48 | uint64(b[10])<<40 | uint64(b[11])<<32 |
		uint64(b[12])<<24 | uint64(b[13])<<16 | uint64(b[14])<<8 | uint64(b[15])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// TimeLayout is the layout of every issued_at this package writes: RFC 3339
// in UTC with milliseconds, fixed width, for example
// "2026-05-19T08:15:30.000Z".
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Timestamp formats t in [TimeLayout] (converted to UTC).
func Timestamp(t time.Time) string { return t.UTC().Format(TimeLayout) }
