package wire

import (
	"reflect"
	"testing"
)

// assertRoundTrip checks that MarshalRequest of an accepted request parses
// back to the same request (dropped fields are not written, so not compared).
func assertRoundTrip(t testing.TB, r *Request) {
	t.Helper()
	data, err := MarshalRequest(r)
	if err != nil {
		t.Fatalf("MarshalRequest: %v", err)
	}
	back, err := ParseRequest(data)
	if err != nil {
		t.Fatalf("re-parse of %s: %v", data, err)
	}
	want := *r
	want.Dropped = nil
	if !reflect.DeepEqual(*back, want) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v\njson %s", *back, want, data)
	}
}
