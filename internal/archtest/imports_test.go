// Package archtest holds the test that keeps docs/architecture.md and the
// import graph the same (decision 0002): the package table there is read
// and every package's imports are checked against its row.
package archtest

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/permtui/permtui"

// root is the module root, two levels up from this package.
var root = filepath.Join("..", "..")

// pkg is one package of the module as its non-test files import.
type pkg struct {
	internal []string // module-relative paths, e.g. internal/wire
	external []string // third-party import paths (not the standard library)
}

// productFiles are the paths of every non-test Go file of the module
// (testdata and dot directories skipped).
func productFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// modulePackages parses the imports of every product file with go/parser.
func modulePackages(t *testing.T) map[string]*pkg {
	t.Helper()
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	for _, path := range productFiles(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &pkg{}
			pkgs[rel] = p
		}
		for _, spec := range f.Imports {
			ip, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case strings.HasPrefix(ip, module+"/"):
				p.internal = appendNew(p.internal, strings.TrimPrefix(ip, module+"/"))
			case strings.Contains(strings.Split(ip, "/")[0], "."):
				p.external = appendNew(p.external, ip)
			}
		}
	}
	for _, p := range pkgs {
		sort.Strings(p.internal)
		sort.Strings(p.external)
	}
	if len(pkgs) < 5 {
		t.Fatalf("found only %d packages under %s", len(pkgs), root)
	}
	return pkgs
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// row is one line of the package table of docs/architecture.md.
type row struct {
	internal    []string // module-relative paths named in "may import"
	anyInternal bool     // "any internal package" (the command only)
	external    []string // the other names in backquotes, matched inside import paths
}

var (
	rowPattern  = regexp.MustCompile("^\\| `([^`]+)` \\|")
	namePattern = regexp.MustCompile("`([^`]+)`")
)

// docTable reads the package table: its first column names the package,
// its last says what it may import.
func docTable(t *testing.T, pkgs map[string]*pkg) map[string]row {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byShort := map[string]string{} // wire → internal/wire
	for path := range pkgs {
		byShort[filepath.Base(path)] = path
	}
	rows := map[string]row{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := rowPattern.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimSpace(line), "|"), "|")
		last := cells[len(cells)-1]
		r := row{anyInternal: strings.Contains(last, "any internal package")}
		for _, n := range namePattern.FindAllStringSubmatch(last, -1) {
			if path, ok := byShort[n[1]]; ok {
				r.internal = append(r.internal, path)
			} else {
				r.external = append(r.external, n[1])
			}
		}
		rows[m[1]] = r
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestArchitectureTableIsTheImportGraph: every package has a row, every row
// a package; a row names exactly the module packages its package imports
// (outside tests), and its other names cover exactly its third-party
// imports. Change an import, change the row.
func TestArchitectureTableIsTheImportGraph(t *testing.T) {
	pkgs := modulePackages(t)
	rows := docTable(t, pkgs)
	for _, path := range sorted(pkgs) {
		p := pkgs[path]
		r, ok := rows[path]
		if !ok {
			t.Errorf("docs/architecture.md: no row for package %s (it imports %v)", path, p.internal)
			continue
		}
		if !r.anyInternal {
			for _, ip := range p.internal {
				if !slices.Contains(r.internal, ip) {
					t.Errorf("%s imports %s, which its row in docs/architecture.md does not list", path, ip)
				}
			}
			for _, ip := range r.internal {
				if !slices.Contains(p.internal, ip) {
					t.Errorf("docs/architecture.md lists %s for %s, which does not import it", filepath.Base(ip), path)
				}
			}
		}
		for _, ip := range p.external {
			if !slices.ContainsFunc(r.external, func(name string) bool { return strings.Contains(ip, name) }) {
				t.Errorf("%s imports %s, which its row in docs/architecture.md does not list", path, ip)
			}
		}
		for _, name := range r.external {
			if !slices.ContainsFunc(p.external, func(ip string) bool { return strings.Contains(ip, name) }) {
				t.Errorf("docs/architecture.md lists `%s` for %s, which imports nothing of that name", name, path)
			}
		}
	}
	for path := range rows {
		if _, ok := pkgs[path]; !ok {
			t.Errorf("docs/architecture.md has a row for %s, which is no package", path)
		}
	}
}

// TestImportRules holds the rules of decision 0002 whatever the table says.
func TestImportRules(t *testing.T) {
	pkgs := modulePackages(t)
	// The leaves: the JSON reader, and the filesystem, watch and terminal
	// helpers, import no package of the module, so everything depends
	// inward on them and never the other way; the protocol imports only
	// the JSON reader.
	if p, ok := pkgs["internal/wire"]; !ok || !slices.Equal(p.internal, []string{"internal/jsonparse"}) {
		t.Errorf("internal/wire imports %v; it may import only internal/jsonparse", p)
	}
	for _, leaf := range []string{"internal/jsonparse", "internal/safefs", "internal/watch", "internal/termsafe", "internal/testkit"} {
		p, ok := pkgs[leaf]
		if !ok {
			t.Errorf("leaf package %s is gone: update this test and decision 0002", leaf)
			continue
		}
		if len(p.internal) > 0 {
			t.Errorf("%s imports %v; it must import no package of the module", leaf, p.internal)
		}
	}
	for _, path := range sorted(pkgs) {
		for _, ip := range pkgs[path].internal {
			switch {
			case strings.HasPrefix(ip, "cmd/"):
				t.Errorf("%s imports %s: nothing imports a command", path, ip)
			case ip == "internal/testkit":
				t.Errorf("%s imports testkit outside its tests", path)
			case ip == "internal/inbox" && (path == "internal/ui" || path == "internal/headless"):
				t.Errorf("%s imports the inbox: front ends see serve's events only", path)
			case path == "internal/ui" && ip == "internal/headless", path == "internal/headless" && ip == "internal/ui":
				t.Errorf("%s imports %s: the two front ends stand side by side", path, ip)
			case path == "internal/resolve" && (ip == "internal/serve" || ip == "internal/inbox" || ip == "internal/grants"):
				t.Errorf("resolve imports %s: judgment depends on no serving machinery", ip)
			}
		}
	}
}

func sorted(pkgs map[string]*pkg) []string {
	paths := make([]string, 0, len(pkgs))
	for p := range pkgs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}
