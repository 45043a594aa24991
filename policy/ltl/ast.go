package ltl

// Range is a half-open byte range [Start, End) in the text a node was parsed
// from (or printed to).
type Range struct{ Start, End int }

// Node is any node of the syntax tree: a Formula or a Term.
type Node interface {
	// Pos is the node's range in the source it was parsed from; zero for
	// nodes built in code.
	Pos() Range
	node()
}

// Formula is a node that has a truth value at a position of a trace.
type Formula interface {
	Node
	formula()
}

// Term is a node that denotes a value: a variable, a field, a literal, a set.
type Term interface {
	Node
	term()
}

// UnaryOp names a unary operator.
type UnaryOp int

// Unary operators. The temporal ones are seed 000 §2.1–2.3.
const (
	OpNot     UnaryOp = iota // ¬φ
	OpG                      // G φ: globally
	OpF                      // F φ: finally
	OpX                      // X φ: next (strong)
	OpP                      // P φ: previously
	OpH                      // H φ: historically
	OpPTarget                // P_target φ
	OpPChain                 // P_chain φ
	OpHTarget                // H_target φ
	OpHChain                 // H_chain φ
)

var unaryNames = [...]string{"¬", "G", "F", "X", "P", "H", "P_target", "P_chain", "H_target", "H_chain"}

func (o UnaryOp) String() string { return unaryNames[o] }

// IsFuture reports whether o is a future-time operator.
func (o UnaryOp) IsFuture() bool { return o == OpG || o == OpF || o == OpX }

// IsPast reports whether o is a past-time operator, scoped or not.
func (o UnaryOp) IsPast() bool { return o >= OpP }

// IsScoped reports whether o is one of the four scoped past operators.
func (o UnaryOp) IsScoped() bool { return o >= OpPTarget }

// BinaryOp names a binary operator.
type BinaryOp int

// Binary operators, boolean and temporal.
const (
	OpAnd     BinaryOp = iota // φ ∧ ψ
	OpOr                      // φ ∨ ψ
	OpImplies                 // φ → ψ
	OpU                       // φ U ψ: until (strong)
	OpS                       // φ S ψ: since
	OpSLast                   // φ S_last ψ: since last
)

var binaryNames = [...]string{"∧", "∨", "→", "U", "S", "S_last"}

func (o BinaryOp) String() string { return binaryNames[o] }

// IsTemporal reports whether o is U, S or S_last.
func (o BinaryOp) IsTemporal() bool { return o >= OpU }

// CompareOp names a comparison between terms.
type CompareOp int

// Comparison operators.
const (
	CmpEq CompareOp = iota
	CmpNeq
	CmpLt
	CmpLe
	CmpGt
	CmpGe
)

var compareNames = [...]string{"=", "≠", "<", "≤", ">", "≥"}

func (o CompareOp) String() string { return compareNames[o] }

// Quant names a quantifier.
type Quant int

// Quantifiers of seed 000 §2.7.
const (
	Forall Quant = iota // ∀
	Exists              // ∃
	Unique              // ∃!: exactly one
)

var quantNames = [...]string{"∀", "∃", "∃!"}

func (q Quant) String() string { return quantNames[q] }

// Formulas.
type (
	// Bool is ⊤ or ⊥.
	Bool struct {
		Value bool
		Range Range
	}

	// Atom is an atomic proposition named by an identifier: an action type
	// (EditFile), a category (gateway), a status (completed), a result status
	// (proved), a trace-level predicate (start_event), high_stakes_path, or a
	// user-defined predicate. Which one is decided when the formula is
	// compiled against a trace (SEMANTICS.md §2).
	Atom struct {
		Name  string
		Range Range
	}

	// TypeCall is the call form T(φ) of an artifact or action type: T holds
	// and φ holds of what T matched, e.g. VerificationResult(proved ∨ sat).
	TypeCall struct {
		Type  string
		Arg   Formula
		Range Range
	}

	// Attribution is an evidence-attribution atom of seed 000 §2.6:
	// strength_at_least(s), oracle_type(t), produced_by(id) or conforms_to(ref).
	// Arg is the argument text verbatim, trimmed of surrounding space.
	Attribution struct {
		Func  string
		Arg   string
		Range Range
	}

	// Unary is ¬φ or a unary temporal operator applied to φ.
	Unary struct {
		Op    UnaryOp
		X     Formula
		Range Range
	}

	// Binary is a boolean connective or U, S, S_last.
	Binary struct {
		Op    BinaryOp
		L, R  Formula
		Range Range
	}

	// Quantified is ∀ x ∈ D . φ, ∃ x ∈ D . φ or ∃! x ∈ D . φ. A nil Domain
	// ranges over the trace's actions.
	Quantified struct {
		Q      Quant
		Var    string
		Domain Term
		Body   Formula
		Range  Range
	}

	// Compare is a comparison between two terms: x.severity ≥ High,
	// rationale ≠ ∅, count(EditFile) ≤ 3, b < a.
	Compare struct {
		Op    CompareOp
		L, R  Term
		Range Range
	}

	// Member is x ∈ S (or x ∉ S when Negated).
	Member struct {
		Elem    Term
		Set     Term
		Negated bool
		Range   Range
	}
)

// Terms.
type (
	// Ident is a name in term position: a bound variable, the current action
	// (a single letter or self that no quantifier binds), a field of the
	// current action (any other unbound lowercase name), a named collection
	// (actions, artifacts, residuals, telemetry) or a symbolic constant
	// (a CamelCase name such as Critical or IMLModel).
	Ident struct {
		Name  string
		Range Range
	}

	// Field is X.Name.
	Field struct {
		X     Term
		Name  string
		Range Range
	}

	// Str is a quoted string literal.
	Str struct {
		Value string
		Range Range
	}

	// Num is a number literal.
	Num struct {
		Value float64
		Text  string
		Range Range
	}

	// EmptySet is ∅: the empty value (absent, empty string, empty list).
	EmptySet struct{ Range Range }

	// Call is a set function: inputs(x), outputs(x), target(x), ancestors(x).
	Call struct {
		Func  string
		Args  []Term
		Range Range
	}

	// Count is count(φ): the number of positions where φ holds.
	Count struct {
		X     Formula
		Range Range
	}

	// SetLit is a set literal {a, b, c}.
	SetLit struct {
		Elems []Term
		Range Range
	}

	// Comprehension is {Expr | Guard}: the values of Expr for each element
	// of Domain (the trace's artifacts when nil) bound to Var that satisfies
	// Guard. Var is the root variable of Expr.
	Comprehension struct {
		Expr   Term
		Var    string
		Domain Term
		Guard  Formula
		Range  Range
	}
)

func (n *Bool) Pos() Range          { return n.Range }
func (n *Atom) Pos() Range          { return n.Range }
func (n *TypeCall) Pos() Range      { return n.Range }
func (n *Attribution) Pos() Range   { return n.Range }
func (n *Unary) Pos() Range         { return n.Range }
func (n *Binary) Pos() Range        { return n.Range }
func (n *Quantified) Pos() Range    { return n.Range }
func (n *Compare) Pos() Range       { return n.Range }
func (n *Member) Pos() Range        { return n.Range }
func (n *Ident) Pos() Range         { return n.Range }
func (n *Field) Pos() Range         { return n.Range }
func (n *Str) Pos() Range           { return n.Range }
func (n *Num) Pos() Range           { return n.Range }
func (n *EmptySet) Pos() Range      { return n.Range }
func (n *Call) Pos() Range          { return n.Range }
func (n *Count) Pos() Range         { return n.Range }
func (n *SetLit) Pos() Range        { return n.Range }
func (n *Comprehension) Pos() Range { return n.Range }

func (*Bool) node()          {}
func (*Atom) node()          {}
func (*TypeCall) node()      {}
func (*Attribution) node()   {}
func (*Unary) node()         {}
func (*Binary) node()        {}
func (*Quantified) node()    {}
func (*Compare) node()       {}
func (*Member) node()        {}
func (*Ident) node()         {}
func (*Field) node()         {}
func (*Str) node()           {}
func (*Num) node()           {}
func (*EmptySet) node()      {}
func (*Call) node()          {}
func (*Count) node()         {}
func (*SetLit) node()        {}
func (*Comprehension) node() {}

func (*Bool) formula()        {}
func (*Atom) formula()        {}
func (*TypeCall) formula()    {}
func (*Attribution) formula() {}
func (*Unary) formula()       {}
func (*Binary) formula()      {}
func (*Quantified) formula()  {}
func (*Compare) formula()     {}
func (*Member) formula()      {}

func (*Ident) term()         {}
func (*Field) term()         {}
func (*Str) term()           {}
func (*Num) term()           {}
func (*EmptySet) term()      {}
func (*Call) term()          {}
func (*Count) term()         {}
func (*SetLit) term()        {}
func (*Comprehension) term() {}

// Children returns the direct sub-nodes of n, left to right.
func Children(n Node) []Node {
	switch n := n.(type) {
	case *TypeCall:
		return []Node{n.Arg}
	case *Unary:
		return []Node{n.X}
	case *Binary:
		return []Node{n.L, n.R}
	case *Quantified:
		if n.Domain == nil {
			return []Node{n.Body}
		}
		return []Node{n.Domain, n.Body}
	case *Compare:
		return []Node{n.L, n.R}
	case *Member:
		return []Node{n.Elem, n.Set}
	case *Field:
		return []Node{n.X}
	case *Call:
		out := make([]Node, len(n.Args))
		for i, a := range n.Args {
			out[i] = a
		}
		return out
	case *Count:
		return []Node{n.X}
	case *SetLit:
		out := make([]Node, len(n.Elems))
		for i, e := range n.Elems {
			out[i] = e
		}
		return out
	case *Comprehension:
		if n.Domain == nil {
			return []Node{n.Expr, n.Guard}
		}
		return []Node{n.Expr, n.Domain, n.Guard}
	}
	return nil
}

// Walk calls visit for n and, while visit returns true, for every node below
// it, in depth-first, left-to-right order.
func Walk(n Node, visit func(Node) bool) {
	if n == nil || !visit(n) {
		return
	}
	for _, c := range Children(n) {
		Walk(c, visit)
	}
}
