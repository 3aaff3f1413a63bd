package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"testing"
)

// maxFuncLines bounds a product function, from its func line to its closing
// brace (issue 22): a longer one is split by job.
const maxFuncLines = 80

// funcLength is one function declaration of a non-test file.
type funcLength struct {
	name  string // "internal/x/file.go: Recv.Name" or "…: Name"
	lines int
}

// funcLengths measures every function of every product file.
func funcLengths(t *testing.T) []funcLength {
	t.Helper()
	var out []funcLength
	fset := token.NewFileSet()
	for _, path := range productFiles(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			out = append(out, funcLength{name: filepath.ToSlash(rel) + ": " + funcName(fn), lines: lines})
		}
	}
	if len(out) < 100 {
		t.Fatalf("found only %d functions under %s", len(out), root)
	}
	return out
}

// funcName is Name, or Recv.Name for a method (pointer and type parameters
// dropped).
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestFunctionLength fails naming each product function over maxFuncLines.
func TestFunctionLength(t *testing.T) {
	lengths := funcLengths(t)
	sort.Slice(lengths, func(i, j int) bool { return lengths[i].lines > lengths[j].lines })
	for _, f := range lengths {
		if f.lines <= maxFuncLines {
			break
		}
		t.Errorf("%s: %d lines (at most %d; split it by job)", f.name, f.lines, maxFuncLines)
	}
}
