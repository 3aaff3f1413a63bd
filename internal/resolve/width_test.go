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
		{"one read grant", []wire.Grant{{"external_directory_read", "/o/p/*"}}, []wire.Grant{{"external_directory", "/o/p/*"}}, true},
		{"two writes", []wire.Grant{{"path_write", "/a/*"}, {"path_write", "/a"}}, []wire.Grant{{"path", "/a/*"}, {"path", "/a"}}, true},
		{"mixed directions", []wire.Grant{{"path_write", "/a/*"}, {"path_read", "/a"}}, nil, false},
		{"bare family already", []wire.Grant{{"path", "/a/*"}}, nil, false},
		{"bash", []wire.Grant{{"bash", "npm *"}}, nil, false},
		{"none", nil, nil, false},
	}
	for _, c := range cases {
		got, ok := Widen(c.in)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Widen = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
