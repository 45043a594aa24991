package record

import (
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Requirements says which requirement each symbol serves: the
// requirements file of `ponens trace symbols --file`.
type Requirements struct {
	list []requirement
}

type requirement struct {
	id      string
	symbols []reqSymbol
}

type reqSymbol struct{ symbol, file string }

// For is the requirement symbol in file serves: among the requirements
// that list it, the first (in file order) that names its file, else the
// first that names the symbol alone; "" when none does.
func (r *Requirements) For(symbol, file string) string {
	first := ""
	for _, q := range r.list {
		for _, s := range q.symbols {
			switch {
			case s.symbol != symbol:
			case s.file != "" && s.file == file:
				return q.id
			case s.file == "" && first == "":
				first = q.id
			}
		}
	}
	return first
}

// ReadRequirements reads a requirements file (YAML or JSON):
//
//	requirements:
//	  - id: stripe-payment-lifecycle
//	    symbols: [step, {symbol: refund, file: payments.py}]
//
// or the list alone. Members other than id and symbols are allowed and
// not read. Errors name the file, line and column.
func ReadRequirements(path string) (*Requirements, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	bad := func(n *yaml.Node, field, expected string) error {
		return fmt.Errorf("%s:%d:%d: %s: expected %s", path, n.Line, n.Column, field, expected)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty: expected a list of requirements", path)
	}
	list := doc.Content[0]
	field := "requirements"
	if list.Kind == yaml.MappingNode {
		if v := member(list, "requirements"); v != nil {
			list = v
		} else {
			return nil, bad(list, "requirements", "a list of requirements")
		}
	}
	if list.Kind != yaml.SequenceNode {
		return nil, bad(list, field, "a list of requirements")
	}
	r := &Requirements{}
	for i, n := range list.Content {
		at := fmt.Sprintf("%s[%d]", field, i)
		id, syms := member(n, "id"), member(n, "symbols")
		switch {
		case n.Kind != yaml.MappingNode:
			return nil, bad(n, at, "a requirement {id, symbols}")
		case id == nil || id.Kind != yaml.ScalarNode || id.Value == "":
			return nil, bad(n, at+".id", "the requirement's id")
		case syms == nil || syms.Kind != yaml.SequenceNode:
			return nil, bad(n, at+".symbols", "a list of symbols")
		}
		q := requirement{id: id.Value}
		for j, s := range syms.Content {
			sat := fmt.Sprintf("%s.symbols[%d]", at, j)
			switch {
			case s.Kind == yaml.ScalarNode && s.Value != "":
				q.symbols = append(q.symbols, reqSymbol{symbol: s.Value})
			case s.Kind == yaml.MappingNode && member(s, "symbol") != nil && member(s, "symbol").Value != "":
				rs := reqSymbol{symbol: member(s, "symbol").Value}
				if f := member(s, "file"); f != nil {
					rs.file = cleanPath(f.Value)
				}
				q.symbols = append(q.symbols, rs)
			default:
				return nil, bad(s, sat, "a symbol name or {symbol, file}")
			}
		}
		r.list = append(r.list, q)
	}
	return r, nil
}

// member is the value of key in mapping n, or nil.
func member(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
