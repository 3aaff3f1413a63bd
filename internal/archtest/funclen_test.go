package archtest

import (
	"fmt"
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

// overLimitOwned names the functions over the bound in files another
// engineer owns this round, each with its owner; the lead empties it when
// their branches merge. Keys are "path: Func" as funcLengths names them.
var overLimitOwned = map[string]string{
	"internal/policyedit/frontmatter.go: editFrontmatter": "JSON engineer",
	"internal/policyedit/jsonc.go: editConfigLF":          "JSON engineer",
}

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

// TestFunctionLength fails naming each product function over maxFuncLines
// that is not in overLimitOwned, and each allowlist entry that no longer
// needs to be there.
func TestFunctionLength(t *testing.T) {
	lengths := funcLengths(t)
	sort.Slice(lengths, func(i, j int) bool { return lengths[i].lines > lengths[j].lines })
	seen := map[string]bool{}
	var over []string
	for _, f := range lengths {
		if f.lines <= maxFuncLines {
			break
		}
		if _, owned := overLimitOwned[f.name]; owned {
			seen[f.name] = true
			continue
		}
		over = append(over, fmt.Sprintf("%s: %d lines", f.name, f.lines))
	}
	for _, o := range over {
		t.Errorf("%s (at most %d; split it by job)", o, maxFuncLines)
	}
	for name, owner := range overLimitOwned {
		if !seen[name] {
			t.Errorf("allowlist entry %q (%s) is at most %d lines now or gone: remove it", name, owner, maxFuncLines)
		}
	}
}
