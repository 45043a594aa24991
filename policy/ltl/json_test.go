package ltl

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
)

// jsonFormulas are formulas for every kind of node, in addition to
// seedFormulas (seed 000 §4 and SEMANTICS.md).
var jsonFormulas = []string{
	"⊤ ∧ ⊥",
	"F X H a ∨ H_target b ∨ H_chain c",
	"a U b S c S_last d",
	"count(EditFile) ≤ 3 ∧ count(RunTests) ≥ 1.50 ∧ x.y.z < 0 ∧ a > 2 ∧ b ≠ ∅",
	`label = "a \"quoted\" <b> & \\ back"`,
	"x ∉ {a, b} ∧ y ∈ {} ∧ z ∈ target(w) ∧ u ∈ ancestors(v)",
	"target_artifact_id ∈ {a.id | a.type = IMLModel}",
	"x ∈ {a.id | a ∈ residuals, a.status = Open}",
	"∀ x . ∃ y ∈ artifacts . x = y",
	"strength_at_least(tests) ∨ oracle_type(smt) ∨ produced_by(a, imandrax) ∨ conforms_to(ref:atlas:mifir-rts22-art4)",
}

func TestJSONRoundTripParsed(t *testing.T) {
	srcs := jsonFormulas
	for _, sf := range seedFormulas {
		srcs = append(srcs, sf.src)
	}
	for _, src := range srcs {
		t.Run(src, func(t *testing.T) {
			f := MustParse(src)
			data := ToJSON(f)
			if !json.Valid(data) {
				t.Fatalf("ToJSON gave invalid JSON: %s", data)
			}
			g, err := FromJSON(data)
			if err != nil {
				t.Fatalf("FromJSON(%s): %v", data, err)
			}
			if Sexpr(g) != Sexpr(f) {
				t.Errorf("round trip changed the tree\n got %s\nwant %s", Sexpr(g), Sexpr(f))
			}
			if Print(g) != Print(f) {
				t.Errorf("round trip changed the printed form\n got %s\nwant %s", Print(g), Print(f))
			}
			if again := ToJSON(g); !bytes.Equal(again, data) {
				t.Errorf("ToJSON is not canonical\n got %s\nwant %s", again, data)
			}
		})
	}
}

// TestJSONRoundTripRandom is a property over generated trees: FromJSON
// inverts ToJSON, and what it builds prints to text that parses to the same
// tree.
func TestJSONRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 3000 {
		f := randomTree(r, 6)
		data := ToJSON(f)
		g, err := FromJSON(data)
		if err != nil {
			t.Fatalf("case %d: FromJSON: %v\n%s", i, err, data)
		}
		if Sexpr(g) != Sexpr(f) {
			t.Fatalf("case %d: round trip changed the tree\n got %s\nwant %s", i, Sexpr(g), Sexpr(f))
		}
		if !bytes.Equal(ToJSON(g), data) {
			t.Fatalf("case %d: ToJSON is not canonical", i)
		}
		h, err := Parse(Print(g))
		if err != nil || Sexpr(h) != Sexpr(f) {
			t.Fatalf("case %d: Print(FromJSON) does not parse back: %v\n%s", i, err, Print(g))
		}
	}
}

func TestToJSONForm(t *testing.T) {
	tests := []struct{ src, want string }{
		{"G(GitCommit → P(RunTests ∧ completed))",
			`{"kind":"unary","op":"G","x":{"kind":"binary","op":"→","l":{"kind":"atom","name":"GitCommit"},` +
				`"r":{"kind":"unary","op":"P","x":{"kind":"binary","op":"∧","l":{"kind":"atom","name":"RunTests"},"r":{"kind":"atom","name":"completed"}}}}}`},
		{"∃! b . b < 1.50",
			`{"kind":"quantified","q":"∃!","var":"b","body":{"kind":"compare","op":"<","l":{"kind":"ident","name":"b"},"r":{"kind":"number","value":1.5,"text":"1.50"}}}`},
		{"x ∉ {a.id | a ∈ residuals, ⊤}",
			`{"kind":"member","negated":true,"elem":{"kind":"ident","name":"x"},"set":{"kind":"setof","expr":{"kind":"field","x":{"kind":"ident","name":"a"},"name":"id"},` +
				`"var":"a","domain":{"kind":"ident","name":"residuals"},"guard":{"kind":"bool","value":true}}}`},
		{"count(T(⊥)) = ∅ ∨ x ∈ {} ∨ y ∈ inputs(z) ∨ oracle_type(smt)",
			`{"kind":"binary","op":"∨","l":{"kind":"binary","op":"∨","l":{"kind":"binary","op":"∨","l":{"kind":"compare","op":"=","l":{"kind":"count","x":{"kind":"call","type":"T","arg":{"kind":"bool","value":false}}},"r":{"kind":"empty"}},` +
				`"r":{"kind":"member","negated":false,"elem":{"kind":"ident","name":"x"},"set":{"kind":"set","elems":[]}}},` +
				`"r":{"kind":"member","negated":false,"elem":{"kind":"ident","name":"y"},"set":{"kind":"func","func":"inputs","args":[{"kind":"ident","name":"z"}]}}},` +
				`"r":{"kind":"attribution","func":"oracle_type","arg":"smt"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			if got := string(ToJSON(MustParse(tt.src))); got != tt.want {
				t.Errorf("ToJSON\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestFromJSONErrors(t *testing.T) {
	atom := `{"kind":"atom","name":"a"}`
	ident := `{"kind":"ident","name":"x"}`
	tests := []struct{ in, want string }{
		{``, `formula JSON $: malformed JSON: unexpected end of JSON input`},
		{`{"kind":`, `formula JSON $: malformed JSON: unexpected end of JSON input`},
		{`{"kind":"atom","name":"a"} x`, `formula JSON $: malformed JSON: invalid character 'x' after top-level value`},
		{`{"kind":"compare","op":"<","l":{"kind":"ident","name":"x"},"r":{"kind":"number","value":1e999}}`, `formula JSON $: malformed JSON: json: cannot unmarshal number 1e999 into Go value of type float64`},
		{`[1]`, `formula JSON $: expected a node object, got an array`},
		{`null`, `formula JSON $: expected a node object, got null`},
		{`{}`, `formula JSON $: node has no "kind"`},
		{`{"kind":3}`, `formula JSON $.kind: expected a string, got a number`},
		{`{"kind":"nope"}`, `formula JSON $.kind: unknown kind "nope" (a formula: ` + jsonFormulaKinds + `)`},
		{ident, `formula JSON $.kind: an ident is a term; a formula (` + jsonFormulaKinds + `) goes here`},
		{`{"kind":"unary","op":"G"}`, `formula JSON $: unary node has no "x"`},
		{`{"kind":"unary","op":"Q","x":` + atom + `}`, `formula JSON $.op: unknown unary operator "Q" (want one of "¬", "G", "F", "X", "P", "H", "P_target", "P_chain", "H_target", "H_chain")`},
		{`{"kind":"binary","op":"∧","l":` + atom + `,"r":{"kind":"unary","op":"F","x":{"kind":"atom","name":"G"}}}`, `formula JSON $.r.x.name: "G" is a keyword and cannot name an atom`},
		{`{"kind":"binary","op":"∧","l":` + atom + `,"r":{"kind":"atom","name":"two words"}}`, `formula JSON $.r.name: "two words" is not an identifier`},
		{`{"kind":"compare","op":"=","l":` + atom + `,"r":` + ident + `}`, `formula JSON $.l.kind: an atom is a formula; a term (` + jsonTermKinds + `) goes here`},
		{`{"kind":"member","negated":"yes","elem":` + ident + `,"set":` + ident + `}`, `formula JSON $.negated: expected a boolean, got a string`},
		{`{"kind":"member","negated":false,"elem":` + ident + `,"set":{"kind":"set","elems":[` + ident + `,{"kind":"field","x":` + ident + `}]}}`, `formula JSON $.set.elems[1]: field node has no "name"`},
		{`{"kind":"member","negated":false,"elem":` + ident + `,"set":{"kind":"set","elems":{}}}`, `formula JSON $.set.elems: expected an array, got an object`},
		{`{"kind":"member","negated":false,"elem":` + ident + `,"set":{"kind":"func","func":"inputs","args":[]}}`, `formula JSON $.set.args: inputs takes 1 argument, got 0`},
		{`{"kind":"member","negated":false,"elem":` + ident + `,"set":{"kind":"func","func":"foo","args":[]}}`, `formula JSON $.set.func: unknown function "foo" (want inputs, outputs, target or ancestors)`},
		{`{"kind":"compare","op":"<","l":` + ident + `,"r":{"kind":"number","value":-1}}`, `formula JSON $.r.value: a formula has no negative numbers, got -1`},
		{`{"kind":"compare","op":"<","l":` + ident + `,"r":{"kind":"number","value":2,"text":"3"}}`, `formula JSON $.r.text: "3" is not the number 2 as a formula writes it`},
		{`{"kind":"compare","op":"<","l":` + ident + `,"r":{"kind":"number","value":"2"}}`, `formula JSON $.r.value: expected a number, got a string`},
		{`{"kind":"compare","op":"<<","l":` + ident + `,"r":` + ident + `}`, `formula JSON $.op: unknown compare operator "<<" (want one of "=", "≠", "<", "≤", ">", "≥")`},
		{`{"kind":"quantified","q":"∀","var":"G","body":` + atom + `}`, `formula JSON $.var: "G" is a keyword and cannot name a variable`},
		{`{"kind":"quantified","q":"∀","var":"x","domain":` + atom + `,"body":` + atom + `}`, `formula JSON $.domain.kind: an atom is a formula; a term (` + jsonTermKinds + `) goes here`},
		{`{"kind":"call","type":"lower","arg":` + atom + `}`, `formula JSON $.type: "lower" is not a type name (CamelCase)`},
		{`{"kind":"attribution","func":"nope","arg":"x"}`, `formula JSON $.func: unknown attribution function "nope" (want strength_at_least, oracle_type, produced_by, conforms_to or ref_model)`},
		{`{"kind":"member","negated":false,"elem":` + ident + `,"set":{"kind":"setof","expr":{"kind":"field","x":{"kind":"ident","name":"a"},"name":"id"},"var":"b","guard":` + atom + `}}`,
			`formula JSON $.set.var: "b" is not the variable at the root of expr ("a")`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			f, err := FromJSON([]byte(tt.in))
			var je *JSONError
			if !errors.As(err, &je) {
				t.Fatalf("FromJSON = %v, %v; want a *JSONError", f, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestFromJSONIgnoresUnknownMembers(t *testing.T) {
	f, err := FromJSON([]byte(`{"kind":"unary","op":"G","x":{"kind":"atom","name":"a","note":"later"},"span":[0,4]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := Sexpr(f); got != "(G a)" {
		t.Errorf("got %s", got)
	}
}
