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
// formula goes and a term where a term goes, identifiers where names go,
// known function names with their arity; members it does not know are
// ignored. It does not resolve atoms or type-check the formula: that is
// Check's job, on the printed form. A failure is a *JSONError naming the
// path of the offending node.
func FromJSON(data []byte) (f Formula, err error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, &JSONError{Path: "$", Msg: "malformed JSON: " + err.Error()}
	}
	defer func() {
		if r := recover(); r != nil {
			je, ok := r.(*JSONError)
			if !ok {
				panic(r)
			}
			f, err = nil, je
		}
	}()
	return formulaFromJSON("$", doc), nil
}

// jsonFail stops decoding with a *JSONError, which FromJSON recovers.
func jsonFail(path, format string, args ...any) {
	panic(&JSONError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// jsonObject is one node being decoded: its members, kind and path.
type jsonObject struct {
	path    string
	kind    string
	members map[string]any
}

// jsonObjectAt takes v, at path, as a node object with a string "kind".
func jsonObjectAt(path string, v any) *jsonObject {
	m, ok := v.(map[string]any)
	if !ok {
		jsonFail(path, "expected a node object, got %s", describeJSON(v))
	}
	o := &jsonObject{path: path, members: m}
	o.kind = o.str("kind")
	return o
}

// describeJSON names the JSON type of v, for an error.
func describeJSON(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	}
	return "null"
}

// member returns the member key, failing when it is absent.
func (o *jsonObject) member(key string) any {
	v, ok := o.members[key]
	if !ok {
		jsonFail(o.path, "%s has no %q", strings.TrimPrefix(o.kind+" node", " "), key)
	}
	return v
}

func (o *jsonObject) str(key string) string {
	v := o.member(key)
	s, ok := v.(string)
	if !ok {
		jsonFail(o.path+"."+key, "expected a string, got %s", describeJSON(v))
	}
	return s
}

// name is a member that must be an identifier of the language.
func (o *jsonObject) name(key string) string {
	s := o.str(key)
	if !scansAs(s, scan.Ident) {
		jsonFail(o.path+"."+key, "%q is not an identifier", s)
	}
	return s
}

// variable is a member naming a bound variable: an identifier, not a
// keyword.
func (o *jsonObject) variable(key string) string {
	v := o.name(key)
	if IsKeyword(v) {
		jsonFail(o.path+"."+key, "%q is a keyword and cannot name a variable", v)
	}
	return v
}

// scansAs reports whether s scans as exactly one token of kind k.
func scansAs(s string, k scan.Kind) bool {
	tok := scan.New(s).Next()
	return tok.Kind == k && tok.Start == 0 && tok.End == len(s)
}

func (o *jsonObject) boolean(key string) bool {
	v := o.member(key)
	b, ok := v.(bool)
	if !ok {
		jsonFail(o.path+"."+key, "expected a boolean, got %s", describeJSON(v))
	}
	return b
}

func (o *jsonObject) list(key string) []any {
	v := o.member(key)
	l, ok := v.([]any)
	if !ok {
		jsonFail(o.path+"."+key, "expected an array, got %s", describeJSON(v))
	}
	return l
}

func (o *jsonObject) formula(key string) Formula {
	return formulaFromJSON(o.path+"."+key, o.member(key))
}
func (o *jsonObject) term(key string) Term { return termFromJSON(o.path+"."+key, o.member(key)) }

// optTerm is a term member that may be absent or null.
func (o *jsonObject) optTerm(key string) Term {
	if v := o.members[key]; v != nil {
		return termFromJSON(o.path+"."+key, v)
	}
	return nil
}

// jsonOp finds the member key among names, the printed forms of an operator
// enum, and returns its index.
func jsonOp[T ~int](o *jsonObject, key string, names []string) T {
	s := o.str(key)
	for i, n := range names {
		if n == s {
			return T(i)
		}
	}
	jsonFail(o.path+"."+key, "unknown %s operator %q (want one of %s)", o.kind, s, jsonQuoteList(names))
	return 0
}

func jsonQuoteList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}

// jsonArticle is "a" or "an", to go before kind.
func jsonArticle(kind string) string {
	if kind != "" && strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an"
	}
	return "a"
}

// jsonFormulaKinds and jsonTermKinds are the kinds of each side, for messages.
const (
	jsonFormulaKinds = "atom, bool, call, attribution, unary, binary, quantified, compare or member"
	jsonTermKinds    = "ident, field, string, number, empty, func, count, set or setof"
)

func formulaFromJSON(path string, v any) Formula {
	o := jsonObjectAt(path, v)
	switch o.kind {
	case "atom":
		name := o.name("name")
		if IsKeyword(name) {
			jsonFail(path+".name", "%q is a keyword and cannot name an atom", name)
		}
		return &Atom{Name: name}
	case "bool":
		return &Bool{Value: o.boolean("value")}
	case "call":
		typ := o.name("type")
		if !isTypeName(typ) {
			jsonFail(path+".type", "%q is not a type name (CamelCase)", typ)
		}
		return &TypeCall{Type: typ, Arg: o.formula("arg")}
	case "attribution":
		fn := o.str("func")
		if !attributionFuncs[fn] {
			jsonFail(path+".func", "unknown attribution function %q (want strength_at_least, oracle_type, produced_by, conforms_to or ref_model)", fn)
		}
		return &Attribution{Func: fn, Arg: o.str("arg")}
	case "unary":
		return &Unary{Op: jsonOp[UnaryOp](o, "op", unaryNames[:]), X: o.formula("x")}
	case "binary":
		return &Binary{Op: jsonOp[BinaryOp](o, "op", binaryNames[:]), L: o.formula("l"), R: o.formula("r")}
	case "quantified":
		return &Quantified{Q: jsonOp[Quant](o, "q", quantNames[:]), Var: o.variable("var"), Domain: o.optTerm("domain"), Body: o.formula("body")}
	case "compare":
		return &Compare{Op: jsonOp[CompareOp](o, "op", compareNames[:]), L: o.term("l"), R: o.term("r")}
	case "member":
		return &Member{Negated: o.boolean("negated"), Elem: o.term("elem"), Set: o.term("set")}
	case "ident", "field", "string", "number", "empty", "func", "count", "set", "setof":
		jsonFail(path+".kind", "%s %s is a term; a formula (%s) goes here", jsonArticle(o.kind), o.kind, jsonFormulaKinds)
	}
	jsonFail(path+".kind", "unknown kind %q (a formula: %s)", o.kind, jsonFormulaKinds)
	return nil
}

func termFromJSON(path string, v any) Term {
	o := jsonObjectAt(path, v)
	switch o.kind {
	case "ident":
		return &Ident{Name: o.name("name")}
	case "field":
		return &Field{X: o.term("x"), Name: o.name("name")}
	case "string":
		return &Str{Value: o.str("value")}
	case "number":
		return o.number()
	case "empty":
		return &EmptySet{}
	case "func":
		fn := o.str("func")
		arity, ok := setFuncs[fn]
		if !ok {
			jsonFail(path+".func", "unknown function %q (want inputs, outputs, target or ancestors)", fn)
		}
		args := o.list("args")
		if len(args) != arity {
			jsonFail(path+".args", "%s takes %d argument, got %d", fn, arity, len(args))
		}
		return &Call{Func: fn, Args: termsFromJSON(path+".args", args)}
	case "count":
		return &Count{X: o.formula("x")}
	case "set":
		return &SetLit{Elems: termsFromJSON(path+".elems", o.list("elems"))}
	case "setof":
		c := &Comprehension{Expr: o.term("expr"), Var: o.variable("var"), Domain: o.optTerm("domain"), Guard: o.formula("guard")}
		if rv := rootVar(c.Expr); rv != c.Var {
			jsonFail(path+".var", "%q is not the variable at the root of expr (%q)", c.Var, rv)
		}
		return c
	case "atom", "bool", "call", "attribution", "unary", "binary", "quantified", "compare", "member":
		jsonFail(path+".kind", "%s %s is a formula; a term (%s) goes here", jsonArticle(o.kind), o.kind, jsonTermKinds)
	}
	jsonFail(path+".kind", "unknown kind %q (a term: %s)", o.kind, jsonTermKinds)
	return nil
}

// number decodes a number node: a finite, non-negative value (the language
// has no negative literals) and, when present, the text it was written as,
// which must scan as a number of that value.
func (o *jsonObject) number() *Num {
	v := o.member("value")
	val, ok := v.(float64)
	if !ok {
		jsonFail(o.path+".value", "expected a number, got %s", describeJSON(v))
	}
	if math.Signbit(val) {
		jsonFail(o.path+".value", "a formula has no negative numbers, got %v", val)
	}
	n := &Num{Value: val}
	if _, ok := o.members["text"]; ok {
		n.Text = o.str("text")
		if w, err := strconv.ParseFloat(n.Text, 64); n.Text != "" && (!scansAs(n.Text, scan.Number) || err != nil || w != val) {
			jsonFail(o.path+".text", "%q is not the number %v as a formula writes it", n.Text, val)
		}
	}
	return n
}

func termsFromJSON(path string, vs []any) []Term {
	if len(vs) == 0 {
		return nil
	}
	out := make([]Term, len(vs))
	for i, v := range vs {
		out[i] = termFromJSON(fmt.Sprintf("%s[%d]", path, i), v)
	}
	return out
}
