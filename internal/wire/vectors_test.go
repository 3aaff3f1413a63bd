package wire

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

type requestVector struct {
	File            string `json:"file"`
	ServedSessionID string `json:"servedSessionId"`
	Expect          string `json:"expect"`
	AccessIntent    string `json:"accessIntent"`
	SessionApproval string `json:"sessionApproval"`
	Payload         string `json:"payload"`
	Why             string `json:"why"`
}

// fieldStatus says what the reader did with an optional field.
func fieldStatus(r *Request, field string, kept bool) string {
	for _, d := range r.Dropped {
		if d.Field == field {
			return "dropped"
		}
	}
	if kept {
		return "kept"
	}
	return "absent"
}

func TestRequestVectors(t *testing.T) {
	vectors := testkit.ReadJSONL[requestVector](t, "requests.jsonl")
	for _, v := range vectors {
		t.Run(filepath.Base(v.File), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(testkit.Dir(t), v.File))
			if err != nil {
				t.Fatal(err)
			}
			r, err := ParseRequest(data)
			var rej *RejectError
			if err != nil && !errors.As(err, &rej) {
				t.Fatalf("error is %T, want *RejectError: %v", err, err)
			}
			accepted := err == nil && r.RoutedTo(v.ServedSessionID)
			if got := map[bool]string{true: "accept", false: "reject"}[accepted]; got != v.Expect {
				t.Fatalf("got %s (err %v), want %s: %s", got, err, v.Expect, v.Why)
			}
			if !accepted {
				return
			}
			sa := fieldStatus(r, "sessionApproval", r.SessionApproval != nil)
			if sa == "kept" && r.SessionApproval.Legacy {
				sa = "legacy"
			}
			got := [3]string{
				fieldStatus(r, "accessIntent", r.AccessIntent != nil),
				sa,
				fieldStatus(r, "payload", r.Payload != nil),
			}
			want := [3]string{v.AccessIntent, v.SessionApproval, v.Payload}
			if got != want {
				t.Fatalf("accessIntent/sessionApproval/payload = %v, want %v (dropped: %v): %s", got, want, r.Dropped, v.Why)
			}
			assertRoundTrip(t, r)
		})
	}
}

type responseVector struct {
	ID           string             `json:"id"`
	Response     stdjson.RawMessage `json:"response"`
	ResponseText *string            `json:"responseText"`
	ChildAccepts bool               `json:"childAccepts"`
	ChildAllows  bool               `json:"childAllows"`
	DecidedBy    string             `json:"decidedBy"`
	GrantWidth   string             `json:"grantWidth"`
	WriterValid  bool               `json:"writerValid"`
	Why          string             `json:"why"`
}

func TestResponseVectors(t *testing.T) {
	vectors := testkit.ReadJSONL[responseVector](t, "responses.jsonl")
	for _, v := range vectors {
		// The writer never writes what the child cannot read (decision 0010);
		// the vectors say so since R44-R54 were corrected.
		if v.WriterValid && !v.ChildAccepts {
			t.Fatalf("%s: writerValid but the child refuses it", v.ID)
		}
		t.Run(v.ID, func(t *testing.T) {
			data := []byte(v.Response)
			if v.ResponseText != nil {
				data = []byte(*v.ResponseText)
			}
			c, err := ReadResponseAsChild(data)
			if accepts := err == nil; accepts != v.ChildAccepts {
				t.Fatalf("child accepts = %v (%v), want %v: %s", accepts, err, v.ChildAccepts, v.Why)
			}
			if err != nil {
				if !errors.Is(err, ErrUnreadableResponse) {
					t.Fatalf("error does not wrap ErrUnreadableResponse: %v", err)
				}
			} else {
				if c.Approved != v.ChildAllows {
					t.Fatalf("child allows = %v, want %v: %s", c.Approved, v.ChildAllows, v.Why)
				}
				if c.DecidedByStatus != v.DecidedBy || (c.DecidedBy != nil) != (v.DecidedBy == DecidedByKept) {
					t.Fatalf("decidedBy %s (%+v), want %s: %s", c.DecidedByStatus, c.DecidedBy, v.DecidedBy, v.Why)
				}
				if v.GrantWidth != "" && c.GrantWidth != v.GrantWidth {
					t.Fatalf("grant width %s, want %s", c.GrantWidth, v.GrantWidth)
				}
			}

			r, decodeErr := DecodeResponse(data)
			validErr := decodeErr
			if validErr == nil {
				validErr = ValidateResponse(r)
			}
			if valid := validErr == nil; valid != v.WriterValid {
				t.Fatalf("writer valid = %v (%v), want %v: %s", valid, validErr, v.WriterValid, v.Why)
			}
			if validErr != nil {
				if _, err := MarshalResponse(r); decodeErr == nil && err == nil {
					t.Fatal("MarshalResponse wrote a response ValidateResponse refuses")
				}
				return
			}
			out, err := MarshalResponse(r)
			if err != nil {
				t.Fatal(err)
			}
			var canonical bytes.Buffer
			if err := stdjson.Compact(&canonical, data); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, canonical.Bytes()) {
				t.Fatalf("MarshalResponse\n got %s\nwant %s", out, canonical.Bytes())
			}
			back, err := ReadResponseAsChild(out)
			if err != nil || back.Approved != r.Approved || back.State != r.State || back.DenialReason != r.DenialReason ||
				back.RespondedAt != r.RespondedAt || back.DecidedByStatus != statusOf(r.DecidedBy) {
				t.Fatalf("round trip through the child reader: %+v, %v", back, err)
			}
		})
	}
}

func statusOf(d *DecisionSource) string {
	if d == nil {
		return DecidedByAbsent
	}
	return DecidedByKept
}
