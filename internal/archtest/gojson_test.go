package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

const goJSON = "github.com/goccy/go-json"

// TestNoGoJSONNoEscapeCalls: go-json's *NoEscape functions let the value
// stay on the caller's stack while its pooled map iterator keeps pointing at
// it, which crashed the collector (decision 0251); product code calls
// Marshal and Unmarshal, which move the value to the heap.
func TestNoGoJSONNoEscapeCalls(t *testing.T) {
	fset := token.NewFileSet()
	for _, path := range productFiles(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		name := goJSONName(f)
		if name == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, isIdent := sel.X.(*ast.Ident); isIdent && x.Name == name && strings.HasSuffix(sel.Sel.Name, "NoEscape") {
				t.Errorf("%s: %s.%s: use Marshal or Unmarshal (decision 0251)", fset.Position(sel.Pos()), name, sel.Sel.Name)
			}
			return true
		})
	}
}

// goJSONName is the name f imports go-json under, or "" when it does not.
func goJSONName(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == goJSON {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "json"
		}
	}
	return ""
}
