package ltl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ponens/ponens/policy/ltl/internal/scan"
)

// The JSON form of a formula (seed 001's FormulaJson, the "formula" member
// of a rule manifest entry) is one object per node, told apart by "kind":
//
//	{"kind":"atom","name":"EditFile"}
//	{"kind":"bool","value":true}
//	{"kind":"call","type":"VerificationResult","arg":φ}
//	{"kind":"attribution","func":"conforms_to","arg":"ref:x"}
//	{"kind":"unary","op":"G","x":φ}                  op: ¬ G F X P H P_target P_chain H_target H_chain
//	{"kind":"binary","op":"→","l":φ,"r":ψ}           op: ∧ ∨ → U S S_last
//	{"kind":"quantified","q":"∀","var":"x","domain":t,"body":φ}  q: ∀ ∃ ∃!; no domain: the actions
//	{"kind":"compare","op":"≤","l":t,"r":u}          op: = ≠ < ≤ > ≥
//	{"kind":"member","negated":false,"elem":t,"set":u}
//
// and for terms:
//
//	{"kind":"ident","name":"x"}
//	{"kind":"field","x":t,"name":"severity"}
//	{"kind":"string","value":"a"}
//	{"kind":"number","value":3,"text":"3"}           text: as written; absent for numbers built in code
//	{"kind":"empty"}
//	{"kind":"func","func":"inputs","args":[t]}
//	{"kind":"count","x":φ}
//	{"kind":"set","elems":[t, …]}
//	{"kind":"setof","expr":t,"var":"a","domain":t,"guard":φ}  no domain: the artifacts
//
// Operators are spelled as the printer spells them. Positions are not
// serialized. Members are written in the order above, so ToJSON's output is
// canonical: equal trees give equal bytes.

// ToJSON returns the JSON form of f. It panics on a number that is not
// finite, which neither Parse nor FromJSON produces.
func ToJSON(f Formula) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(toJSONNode(f)); err != nil {
		panic(fmt.Sprintf("ltl.ToJSON: %v", err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// The JSON objects, one struct per kind so that members come in a fixed
// order.
type (
	jsonAtom struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	}
	jsonBool struct {
		Kind  string `json:"kind"`
		Value bool   `json:"value"`
	}
	jsonCall struct {
		Kind string `json:"kind"`
		Type string `json:"type"`
		Arg  any    `json:"arg"`
	}
	jsonAttribution struct {
		Kind string `json:"kind"`
		Func string `json:"func"`
		Arg  string `json:"arg"`
	}
	jsonUnary struct {
		Kind string `json:"kind"`
		Op   string `json:"op"`
		X    any    `json:"x"`
	}
	jsonBinary struct {
		Kind string `json:"kind"`
		Op   string `json:"op"`
		L    any    `json:"l"`
		R    any    `json:"r"`
	}
	jsonQuantified struct {
		Kind   string `json:"kind"`
		Q      string `json:"q"`
		Var    string `json:"var"`
		Domain any    `json:"domain,omitempty"`
		Body   any    `json:"body"`
	}
	jsonMember struct {
		Kind    string `json:"kind"`
		Negated bool   `json:"negated"`
		Elem    any    `json:"elem"`
		Set     any    `json:"set"`
	}
	jsonField struct {
		Kind string `json:"kind"`
		X    any    `json:"x"`
		Name string `json:"name"`
	}
	jsonString struct {
		Kind  string `json:"kind"`
		Value string `json:"value"`
	}
	jsonNumber struct {
		Kind  string  `json:"kind"`
		Value float64 `json:"value"`
		Text  string  `json:"text,omitempty"`
	}
	jsonEmpty struct {
		Kind string `json:"kind"`
	}
	jsonFunc struct {
		Kind string `json:"kind"`
		Func string `json:"func"`
		Args []any  `json:"args"`
	}
	jsonCount struct {
		Kind string `json:"kind"`
		X    any    `json:"x"`
	}
	jsonSet struct {
		Kind  string `json:"kind"`
		Elems []any  `json:"elems"`
	}
	jsonSetOf struct {
		Kind   string `json:"kind"`
		Expr   any    `json:"expr"`
		Var    string `json:"var"`
		Domain any    `json:"domain,omitempty"`
		Guard  any    `json:"guard"`
	}
)

// toJSONNode converts n to the struct its JSON object is written from; a
// nil n gives nil (null).
func toJSONNode(n Node) any {
	switch n := n.(type) {
	case *Atom:
		return jsonAtom{"atom", n.Name}
	case *Bool:
		return jsonBool{"bool", n.Value}
	case *TypeCall:
		return jsonCall{"call", n.Type, toJSONNode(n.Arg)}
	case *Attribution:
		return jsonAttribution{"attribution", n.Func, n.Arg}
	case *Unary:
		return jsonUnary{"unary", n.Op.String(), toJSONNode(n.X)}
	case *Binary:
		return jsonBinary{"binary", n.Op.String(), toJSONNode(n.L), toJSONNode(n.R)}
	case *Quantified:
		q := jsonQuantified{Kind: "quantified", Q: n.Q.String(), Var: n.Var, Body: toJSONNode(n.Body)}
		if n.Domain != nil {
			q.Domain = toJSONNode(n.Domain)
		}
		return q
	case *Compare:
		return jsonBinary{"compare", n.Op.String(), toJSONNode(n.L), toJSONNode(n.R)}
	case *Member:
		return jsonMember{"member", n.Negated, toJSONNode(n.Elem), toJSONNode(n.Set)}
	case *Ident:
		return jsonAtom{"ident", n.Name}
	case *Field:
		return jsonField{"field", toJSONNode(n.X), n.Name}
	case *Str:
		return jsonString{"string", n.Value}
	case *Num:
		if math.IsInf(n.Value, 0) || math.IsNaN(n.Value) {
			panic(fmt.Sprintf("ltl.ToJSON: number %v is not finite", n.Value))
		}
		return jsonNumber{"number", n.Value, n.Text}
	case *EmptySet:
		return jsonEmpty{"empty"}
	case *Call:
		return jsonFunc{"func", n.Func, toJSONList(n.Args)}
	case *Count:
		return jsonCount{"count", toJSONNode(n.X)}
	case *SetLit:
		return jsonSet{"set", toJSONList(n.Elems)}
	case *Comprehension:
		c := jsonSetOf{Kind: "setof", Expr: toJSONNode(n.Expr), Var: n.Var, Guard: toJSONNode(n.Guard)}
		if n.Domain != nil {
			c.Domain = toJSONNode(n.Domain)
		}
		return c
	}
	return nil
}

func toJSONList(ts []Term) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = toJSONNode(t)
	}
	return out
}

// JSONError is a problem with the JSON form of a formula, at a path in it:
// "$" is the root object, "$.x.l" its operand's left side, "$.args[0]" the
// first argument of a function.
type JSONError struct {
	Path string
	Msg  string
}

func (e *JSONError) Error() string { return fmt.Sprintf("formula JSON %s: %s", e.Path, e.Msg) }

// FromJSON reads the JSON form of a formula back into a tree (without
// positions). It checks the shape of every node: a known kind, every member
// the kind needs with the right type, known operators, a formula where a
// formula goes and a term where a term goes, known function names with
// their arity; members it does not know are ignored. It does not resolve
// atoms or type-check the formula: that is Check's job, on the printed form.
// A failure is a *JSONError naming the path of the offending node.
func FromJSON(data []byte) (Formula, error) {
	d := jsonDecoder{}
	var f Formula
	func() {
		defer func() {
			if r := recover(); r != nil {
				je, ok := r.(*JSONError)
				if !ok {
					panic(r)
				}
				d.err = je
			}
		}()
		f = d.formula("$", json.RawMessage(data))
	}()
	if d.err != nil {
		return nil, d.err
	}
	return f, nil
}

// jsonDecoder decodes the JSON form; a problem panics with a *JSONError,
// which FromJSON recovers.
type jsonDecoder struct{ err *JSONError }

func (d *jsonDecoder) fail(path, format string, args ...any) {
	panic(&JSONError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// jsonObject is one decoded node: its members, and its path.
type jsonObject struct {
	d       *jsonDecoder
	path    string
	kind    string
	members map[string]json.RawMessage
}

// object decodes raw as a node object with a string "kind".
func (d *jsonDecoder) object(path string, raw json.RawMessage) *jsonObject {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		d.fail(path, "expected a node object, got %s", describeJSON(raw, err))
	}
	o := &jsonObject{d: d, path: path, members: m}
	o.kind = o.str("kind")
	return o
}

// describeJSON names what raw is, for an error: the decoder's message when
// it is not JSON at all, else its JSON type.
func describeJSON(raw json.RawMessage, err error) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	if !json.Valid(t) && err != nil {
		return "malformed JSON (" + err.Error() + ")"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// member returns the member key, failing when it is absent.
func (o *jsonObject) member(key string) json.RawMessage {
	raw, ok := o.members[key]
	if !ok {
		o.d.fail(o.path, "%s has no %q", strings.TrimPrefix(o.kind+" node", " "), key)
	}
	return raw
}

func (o *jsonObject) str(key string) string {
	var s string
	if raw := o.member(key); json.Unmarshal(raw, &s) != nil {
		o.d.fail(o.path+"."+key, "expected a string, got %s", describeJSON(raw, nil))
	}
	return s
}

// name is a member that must be an identifier of the language.
func (o *jsonObject) name(key string) string {
	s := o.str(key)
	if !isToken(s, scan.Ident) {
		o.d.fail(o.path+"."+key, "%q is not an identifier", s)
	}
	return s
}

// isToken reports whether s scans as exactly one token of kind k.
func isToken(s string, k scan.Kind) bool {
	tok := scan.New(s).Next()
	return tok.Kind == k && tok.Start == 0 && tok.End == len(s)
}

func (o *jsonObject) boolean(key string) bool {
	var b bool
	if raw := o.member(key); json.Unmarshal(raw, &b) != nil {
		o.d.fail(o.path+"."+key, "expected a boolean, got %s", describeJSON(raw, nil))
	}
	return b
}

func (o *jsonObject) list(key string) []json.RawMessage {
	var l []json.RawMessage
	raw := o.member(key)
	if err := json.Unmarshal(raw, &l); err != nil || l == nil {
		o.d.fail(o.path+"."+key, "expected an array, got %s", describeJSON(raw, nil))
	}
	return l
}

func (o *jsonObject) formula(key string) Formula { return o.d.formula(o.path+"."+key, o.member(key)) }
func (o *jsonObject) term(key string) Term       { return o.d.term(o.path+"."+key, o.member(key)) }

// optTerm is a term member that may be absent or null.
func (o *jsonObject) optTerm(key string) Term {
	raw, ok := o.members[key]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return o.d.term(o.path+"."+key, raw)
}

// op finds the member key among names, the printed forms of an operator
// enum, and returns its index.
func op[T ~int](o *jsonObject, key string, names []string) T {
	s := o.str(key)
	for i, n := range names {
		if n == s {
			return T(i)
		}
	}
	o.d.fail(o.path+"."+key, "unknown %s operator %q (want one of %s)", o.kind, s, quoteList(names))
	return 0
}

func quoteList(names []string) string {
	var b bytes.Buffer
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}

// article is "a" or "an", to go before kind.
func article(kind string) string {
	if strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an"
	}
	return "a"
}

// formulaKinds and termKinds are the kinds of each side, for messages.
const (
	formulaKinds = "atom, bool, call, attribution, unary, binary, quantified, compare or member"
	termKinds    = "ident, field, string, number, empty, func, count, set or setof"
)

func (d *jsonDecoder) formula(path string, raw json.RawMessage) Formula {
	o := d.object(path, raw)
	switch o.kind {
	case "atom":
		name := o.name("name")
		if IsKeyword(name) {
			d.fail(path+".name", "%q is a keyword and cannot name an atom", name)
		}
		return &Atom{Name: name}
	case "bool":
		return &Bool{Value: o.boolean("value")}
	case "call":
		typ := o.name("type")
		if !isTypeName(typ) {
			d.fail(path+".type", "%q is not a type name (CamelCase)", typ)
		}
		return &TypeCall{Type: typ, Arg: o.formula("arg")}
	case "attribution":
		fn := o.str("func")
		if !attributionFuncs[fn] {
			d.fail(path+".func", "unknown attribution function %q (want strength_at_least, oracle_type, produced_by or conforms_to)", fn)
		}
		return &Attribution{Func: fn, Arg: o.str("arg")}
	case "unary":
		return &Unary{Op: op[UnaryOp](o, "op", unaryNames[:]), X: o.formula("x")}
	case "binary":
		return &Binary{Op: op[BinaryOp](o, "op", binaryNames[:]), L: o.formula("l"), R: o.formula("r")}
	case "quantified":
		return &Quantified{Q: op[Quant](o, "q", quantNames[:]), Var: o.variable("var"), Domain: o.optTerm("domain"), Body: o.formula("body")}
	case "compare":
		return &Compare{Op: op[CompareOp](o, "op", compareNames[:]), L: o.term("l"), R: o.term("r")}
	case "member":
		return &Member{Negated: o.boolean("negated"), Elem: o.term("elem"), Set: o.term("set")}
	case "ident", "field", "string", "number", "empty", "func", "count", "set", "setof":
		d.fail(path+".kind", "%s %s is a term; a formula (%s) goes here", article(o.kind), o.kind, formulaKinds)
	}
	d.fail(path+".kind", "unknown kind %q (a formula: %s)", o.kind, formulaKinds)
	return nil
}

func (d *jsonDecoder) term(path string, raw json.RawMessage) Term {
	o := d.object(path, raw)
	switch o.kind {
	case "ident":
		return &Ident{Name: o.name("name")}
	case "field":
		return &Field{X: o.term("x"), Name: o.name("name")}
	case "string":
		return &Str{Value: o.str("value")}
	case "number":
		var v float64
		if raw := o.member("value"); json.Unmarshal(raw, &v) != nil {
			d.fail(path+".value", "expected a number, got %s", describeJSON(raw, nil))
		}
		if math.Signbit(v) {
			d.fail(path+".value", "a formula has no negative numbers, got %v", v)
		}
		n := &Num{Value: v}
		if _, ok := o.members["text"]; ok {
			n.Text = o.str("text")
			if w, err := strconv.ParseFloat(n.Text, 64); n.Text != "" && (!isToken(n.Text, scan.Number) || err != nil || w != v) {
				d.fail(path+".text", "%q is not the number %v as a formula writes it", n.Text, v)
			}
		}
		return n
	case "empty":
		return &EmptySet{}
	case "func":
		fn := o.str("func")
		arity, ok := setFuncs[fn]
		if !ok {
			d.fail(path+".func", "unknown function %q (want inputs, outputs, target or ancestors)", fn)
		}
		raws := o.list("args")
		if len(raws) != arity {
			d.fail(path+".args", "%s takes %d argument, got %d", fn, arity, len(raws))
		}
		return &Call{Func: fn, Args: d.terms(path+".args", raws)}
	case "count":
		return &Count{X: o.formula("x")}
	case "set":
		return &SetLit{Elems: d.terms(path+".elems", o.list("elems"))}
	case "setof":
		c := &Comprehension{Expr: o.term("expr"), Var: o.variable("var"), Domain: o.optTerm("domain"), Guard: o.formula("guard")}
		if rv := rootVar(c.Expr); rv != c.Var {
			d.fail(path+".var", "%q is not the variable at the root of expr (%q)", c.Var, rv)
		}
		return c
	case "atom", "bool", "call", "attribution", "unary", "binary", "quantified", "compare", "member":
		d.fail(path+".kind", "%s %s is a formula; a term (%s) goes here", article(o.kind), o.kind, termKinds)
	}
	d.fail(path+".kind", "unknown kind %q (a term: %s)", o.kind, termKinds)
	return nil
}

func (d *jsonDecoder) terms(path string, raws []json.RawMessage) []Term {
	if len(raws) == 0 {
		return nil
	}
	out := make([]Term, len(raws))
	for i, raw := range raws {
		out[i] = d.term(fmt.Sprintf("%s[%d]", path, i), raw)
	}
	return out
}

// variable is a member naming a bound variable: not empty, not a keyword.
func (o *jsonObject) variable(key string) string {
	v := o.name(key)
	if IsKeyword(v) {
		o.d.fail(o.path+"."+key, "%q is a keyword and cannot name a variable", v)
	}
	return v
}
