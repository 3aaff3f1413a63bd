package resolve

import (
	"reflect"
	"testing"

	"github.com/permtui/permtui/internal/wire"
)

func TestWiden(t *testing.T) {
	cases := []struct {
		name string
		in   []wire.Grant
		want []wire.Grant
		ok   bool
	}{
		{"one read grant", []wire.Grant{{Surface: "external_directory_read", Pattern: "/o/p/*"}}, []wire.Grant{{Surface: "external_directory", Pattern: "/o/p/*"}}, true},
		{"two writes", []wire.Grant{{Surface: "path_write", Pattern: "/a/*"}, {Surface: "path_write", Pattern: "/a"}}, []wire.Grant{{Surface: "path", Pattern: "/a/*"}, {Surface: "path", Pattern: "/a"}}, true},
		{"mixed directions", []wire.Grant{{Surface: "path_write", Pattern: "/a/*"}, {Surface: "path_read", Pattern: "/a"}}, nil, false},
		{"bare family already", []wire.Grant{{Surface: "path", Pattern: "/a/*"}}, nil, false},
		{"bash", []wire.Grant{{Surface: "bash", Pattern: "npm *"}}, nil, false},
		{"none", nil, nil, false},
	}
	for _, c := range cases {
		got, ok := Widen(c.in)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Widen = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
