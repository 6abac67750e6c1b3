package evidence

import (
	"strings"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/toolmeta"
)

// ToolIntent is a tool's normalized metadata (evidence.md §4), as package
// toolmeta merges it: each of the five fields over every source that
// claims it, toward the more dangerous value, with its source
// (Sources), the disagreements (Conflicts) and Warnings. [Normalize] and
// [ToolIntentOf] make one from a receipt, a tools/list declaration and a
// tool definition.
type ToolIntent = toolmeta.Intent

// The five normalized fields, as named in ToolIntent.Sources.
const (
	FieldDeclaredSideEffects = toolmeta.FieldDeclaredSideEffects
	FieldSideEffect          = toolmeta.FieldSideEffect
	FieldDataClasses         = toolmeta.FieldDataClasses
	FieldExternality         = toolmeta.FieldExternality
	FieldRequiredScopes      = toolmeta.FieldRequiredScopes
)

// IntentFields are the five normalized fields in their fixed order
// (toolmeta.Fields). Do not modify.
var IntentFields = toolmeta.Fields

// Sources of a normalized field, strongest first, and their weight in
// [Confidence] (evidence.md §4; toolmeta.Weights).
const (
	SourceVerifiedReceipt = toolmeta.SourceVerifiedReceipt // 1.0: a receipt with status ok
	SourceUnsignedReceipt = toolmeta.SourceUnsignedReceipt // 0.9: status unsigned or unknown
	SourceMeta            = toolmeta.SourceMeta            // 0.85: tools/list _meta declaration
	SourceAnnotation      = toolmeta.SourceAnnotation      // 0.75: MCP tool annotations
	SourceHeuristic       = toolmeta.SourceHeuristic       // 0.5: name, description, schema
	SourceUnknown         = toolmeta.SourceUnknown         // 0: nothing said; default value
)

// IntentSources are the sources of a normalized field, strongest first
// (toolmeta.Sources). Do not modify.
var IntentSources = toolmeta.Sources

// SourceWeights are the weights of [Confidence] per source
// (toolmeta.Weights). Do not modify.
var SourceWeights = toolmeta.Weights

// WarningMetadataConflict prefixes the warning of a field on which the
// sources disagree: "metadata_conflict:side_effect" (evidence.md §4).
const WarningMetadataConflict = toolmeta.WarningConflict

// ConflictPenalty is what each receipt conflict subtracts in [Confidence].
const ConflictPenalty = toolmeta.ConflictPenalty

// IntentInput is everything [Normalize] may draw on. Every field may be
// zero.
type IntentInput struct {
	// Receipt is the call's server receipt and ReceiptStatus its [Verify]
	// result. A receipt with status ok is a verified source; unsigned or
	// unknown an unsigned source; tampered or empty is ignored, as is a
	// synthesized receipt (issued_by "gateway"). Callers should pass nil
	// for a receipt with [Conflicts] (it may describe another call) or
	// account for them in [Confidence].
	Receipt       *ServerReceipt
	ReceiptStatus Status
	// Declaration is the tool's tools/list _meta declaration
	// ([FindToolDeclaration], [ParseDeclaration]).
	Declaration *ToolDeclaration
	// Tool is the tool's definition: annotations, name, description and
	// inputSchema for the weaker sources.
	Tool *mcp.Tool
}

// Normalize returns the tool's intent (evidence.md §4; docs/evidence.md,
// "Tool metadata normalization"): toolmeta.Merge of the claims, strongest
// first, of
//
//  1. the receipt, verified or unsigned (see [IntentInput]): its fields
//     present and valid;
//  2. the declaration: likewise;
//  3. the tool's annotations and 4. heuristics over its name, description
//     and inputSchema (toolmeta.ToolClaims).
//
// The merge takes the most dangerous side_effect, the widest externality
// and the union of the lists (heuristics alone never make a field less
// dangerous than unknown); a receipt or declaration that declares
// effects also claims the side_effect they imply; each disagreement is a
// Conflicts entry (metadata_conflict:<field>) that lowers the field's
// weight to the weaker source's. A field no source claims is unknown:
// side_effect "destructive" and externality "external" (the MCP defaults),
// the slices nil.
//
// Slices are copies. Normalize is pure and never fails.
//
// Normalize(in) is [WithReceipt](Normalize(in without its receipt),
// in.Receipt, in.ReceiptStatus): a caller may compute the part that
// depends only on the tool once per tool definition ([ToolIntentOf]).
func Normalize(in IntentInput) ToolIntent {
	return WithReceipt(normalizeTool(in.Declaration, in.Tool), in.Receipt, in.ReceiptStatus)
}

// ToolIntentOf returns the intent of a listed tool definition without a
// receipt: [Normalize] of its _meta declaration ([FindToolDeclaration] and
// [ParseDeclaration] over tool.Meta; the valid fields of a declaration
// with problems count, one that is not an object does not) and of tool
// itself. A nil tool is an unknown one (every field unknown).
func ToolIntentOf(tool *mcp.Tool) ToolIntent {
	if tool == nil {
		return normalizeTool(nil, nil)
	}
	var decl *ToolDeclaration
	if len(tool.Meta) > 0 {
		obj := append(append([]byte(`{"_meta":`), tool.Meta...), '}')
		if raw, ok := FindToolDeclaration(obj); ok {
			if d, problems, err := ParseDeclaration(raw); err == nil {
				decl = towardDanger(d, problems)
			}
		}
	}
	return normalizeTool(decl, tool)
}

// towardDanger is declaration d with the fields that tried to say what the
// tool does but could not be read (a problem: an item repeated or outside
// the vocabulary, a value of the wrong type or case) taken as the unknown
// default, the most dangerous value the gateway assumes of a tool it knows
// nothing about: side_effect destructive for a flawed side_effect or
// declared_side_effects, externality external for a flawed externality. A
// declaration that names "delete" with one flaw must not leave the tool as
// read-only as its annotations say (evidence.md §4: toward the more
// dangerous value). d is modified and returned.
func towardDanger(d *ToolDeclaration, problems []Problem) *ToolDeclaration {
	for _, p := range problems {
		field, _, _ := strings.Cut(p.Field, "[")
		switch field {
		case FieldSideEffect, FieldDeclaredSideEffects:
			d.SideEffect = mcp.SideEffectDestructive
		case FieldExternality:
			if d.Externality == "" {
				d.Externality = "external"
			}
		}
	}
	return d
}

// receiptSource is the Source of receipt r with status, or "" when
// Normalize ignores it (nil, synthesized, tampered or empty).
func receiptSource(r *ServerReceipt, status Status) string {
	if r == nil || r.IssuedBy == IssuedByGateway {
		return ""
	}
	switch status {
	case StatusOK:
		return SourceVerifiedReceipt
	case StatusUnsigned, StatusUnknown:
		return SourceUnsignedReceipt
	}
	return ""
}

// WithReceipt returns the intent [Normalize] gives when receipt r with
// status is added to the input that gave it: r's claim, the strongest,
// merged with it's claims (toolmeta.Intent.With). When Normalize ignores r
// (nil, synthesized by the gateway, status tampered or empty) the result
// is it itself, sharing its maps and slices; otherwise it is a new intent
// whose maps and slices are its own. it is never modified.
func WithReceipt(it ToolIntent, r *ServerReceipt, status Status) ToolIntent {
	source := receiptSource(r, status)
	if source == "" {
		return it
	}
	return it.With(toolmeta.Claim{Source: source, DeclaredSideEffects: r.DeclaredSideEffects, SideEffect: r.SideEffect,
		DataClasses: r.DataClasses, Externality: r.Externality, RequiredScopes: r.RequiredScopes})
}

// normalizeTool is Normalize without a receipt: the declaration, the
// annotations and the heuristics.
func normalizeTool(decl *ToolDeclaration, tool *mcp.Tool) ToolIntent {
	var c *toolmeta.Claim
	if d := decl; d != nil {
		c = &toolmeta.Claim{Source: SourceMeta, DeclaredSideEffects: d.DeclaredSideEffects, SideEffect: d.SideEffect,
			DataClasses: d.DataClasses, Externality: d.Externality, RequiredScopes: d.RequiredScopes}
	}
	return toolmeta.OfTool(c, tool)
}

// Confidence returns the metadata_confidence of intent (evidence.md §4):
// toolmeta.Confidence, the mean over the five fields of each field's
// weight (its source's, or its Conflicts source's when that weighs less),
// minus [ConflictPenalty] per receipt conflict ([Conflicts]; negative
// counts are 0), clamped to [0, 1] and rounded to two decimals. For
// example all five from a verified receipt with one conflict gives 0.9;
// side_effect and externality from annotations and the rest unknown gives
// 0.3.
func Confidence(intent ToolIntent, conflicts int) float64 {
	return toolmeta.Confidence(intent, conflicts)
}
