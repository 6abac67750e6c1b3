// Package evidence holds Gatehouse's security evidence formats and the
// operations on them (shared/spec/evidence.md §1–§4, §6; docs/evidence.md):
//
//   - RFC 8785 canonical JSON and the "sha256:<hex>" hashes built on it
//     ([Canonical], [Hash]);
//   - server receipts (the McpSecurityReceipt draft v0.1): finding them in a
//     tools/call result ([Find]), strict parsing and validation ([Parse]),
//     signing and verification ([Sign], [Verify]), conflicts with the call
//     the gateway observed ([Conflicts]), the receipt the gateway synthesizes
//     when a server emits none ([Synthesize]), and the receipts.require
//     table ([Requirement.Check]);
//   - tool metadata normalization from the strongest available source, with
//     a recomputable confidence ([Normalize], [Confidence]);
//   - gateway decision receipts, one per phase of a call (decision,
//     outcome), which reference server receipts by id, carry them as
//     received, and make the lineage server_receipt_id ->
//     gateway_decision_id -> audit_event_id walkable both ways
//     ([GatewayDecisionReceipt]).
//
// A server receipt is evidence, never authority: the gateway computes its
// verification status itself and ignores what the receipt claims.
// Problems and conflicts name fields, never their values, so that they can
// be logged without leaking payload data. Nothing in this package logs.
//
// Every function is safe for concurrent use; values returned are not
// shared.
package evidence
