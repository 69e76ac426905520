package filter

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	payload := `{"status":"approved","payout":12.5,"payout_s":"12.50","count":3,"country":"BR",
		"big":9007199254740993,"tags":["vip","eu"],"flag":true,"none":null,
		"customer":{"address":{"country":"PT"},"tier":"gold"},"items":[{"sku":"A1"},{"sku":"B2"}]}`
	tests := []struct {
		name   string
		filter string
		want   bool
	}{
		{"empty matches all", `{}`, true},
		{"literal string", `{"status":"approved"}`, true},
		{"literal string differs", `{"status":"rejected"}`, false},
		{"implicit and", `{"status":"approved","payout":{"$gte":1},"country":{"$in":["BR","PT"]}}`, true},
		{"implicit and one fails", `{"status":"approved","payout":{"$gte":100}}`, false},
		{"$eq number", `{"payout":{"$eq":12.50}}`, true},
		{"number equals by value", `{"count":3.0}`, true},
		{"$ne", `{"status":{"$ne":"rejected"}}`, true},
		{"$ne equal", `{"status":{"$ne":"approved"}}`, false},
		{"$ne absent", `{"missing":{"$ne":"x"}}`, true},
		{"$gt", `{"payout":{"$gt":12}}`, true},
		{"$gt equal", `{"payout":{"$gt":12.5}}`, false},
		{"$gte", `{"payout":{"$gte":12.5}}`, true},
		{"$lt", `{"payout":{"$lt":13}}`, true},
		{"$lte", `{"payout":{"$lte":12.4}}`, false},
		{"range", `{"payout":{"$gt":10,"$lt":20}}`, true},
		{"numeric string vs number", `{"payout_s":{"$gte":12.5}}`, true},
		{"numeric string equals number", `{"payout_s":12.5}`, true},
		{"string operand does not match number", `{"payout":"12.5"}`, false},
		{"string comparison", `{"country":{"$gte":"BA","$lt":"BZ"}}`, true},
		{"string operand vs number payload", `{"payout":{"$gt":"1"}}`, false},
		{"big integers exact", `{"big":9007199254740993}`, true},
		{"big integers exact differ", `{"big":9007199254740992}`, false},
		{"$gt absent", `{"missing":{"$gt":0}}`, false},
		{"$in", `{"country":{"$in":["PT","BR"]}}`, true},
		{"$in none", `{"country":{"$in":["PT","ES"]}}`, false},
		{"$in numbers", `{"count":{"$in":[1,2,3]}}`, true},
		{"$nin", `{"country":{"$nin":["PT","ES"]}}`, true},
		{"$nin hit", `{"country":{"$nin":["BR"]}}`, false},
		{"$nin absent", `{"missing":{"$nin":["BR"]}}`, true},
		{"$exists true", `{"status":{"$exists":true}}`, true},
		{"$exists null value", `{"none":{"$exists":true}}`, true},
		{"$exists false", `{"missing":{"$exists":false}}`, true},
		{"$exists false present", `{"status":{"$exists":false}}`, false},
		{"null matches null", `{"none":null}`, true},
		{"null matches absent", `{"missing":null}`, true},
		{"null does not match value", `{"status":null}`, false},
		{"bool", `{"flag":true}`, true},
		{"bool differs", `{"flag":false}`, false},
		{"nested path", `{"customer.address.country":"PT"}`, true},
		{"nested path through scalar", `{"status.x":"a"}`, false},
		{"array index", `{"items.1.sku":"B2"}`, true},
		{"array index out of range", `{"items.5.sku":{"$exists":true}}`, false},
		{"array any element", `{"tags":"vip"}`, true},
		{"array $in", `{"tags":{"$in":["eu"]}}`, true},
		{"array $ne any element", `{"tags":{"$ne":"vip"}}`, false},
		{"array literal", `{"tags":["vip","eu"]}`, true},
		{"array literal order", `{"tags":["eu","vip"]}`, false},
		{"object literal", `{"customer.address":{"country":"PT"}}`, true},
		{"object literal $eq", `{"customer.address":{"$eq":{"country":"PT"}}}`, true},
		{"$or", `{"$or":[{"status":"rejected"},{"payout":{"$gt":10}}]}`, true},
		{"$or none", `{"$or":[{"status":"rejected"},{"payout":{"$gt":100}}]}`, false},
		{"$and", `{"$and":[{"status":"approved"},{"country":"BR"}]}`, true},
		{"$not", `{"$not":{"status":"rejected"}}`, true},
		{"$not hit", `{"$not":{"status":"approved","country":"BR"}}`, false},
		{"field $not", `{"payout":{"$not":{"$gt":100}}}`, true},
		{"field $not hit", `{"payout":{"$not":{"$gt":1}}}`, false},
		{"nested logic", `{"$or":[{"$and":[{"country":"PT"},{"payout":{"$gte":1}}]},{"customer.tier":{"$in":["gold","platinum"]}}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Compile([]byte(tt.filter))
			if err != nil {
				t.Fatalf("Compile(%s): %v", tt.filter, err)
			}
			if got := f.Match([]byte(payload)); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatchInvalidPayload(t *testing.T) {
	f, err := Compile([]byte(`{"missing":{"$exists":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{``, `{`, `{"a":1} x`} {
		if f.Match([]byte(p)) {
			t.Errorf("Match(%q) = true, want false", p)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, filter, path, msg string
	}{
		{"not json", `{"a":`, "", "not valid JSON"},
		{"empty", ``, "", "is empty"},
		{"trailing", `{} {}`, "", "data after"},
		{"array root", `[]`, "", "must be a JSON object"},
		{"string root", `"x"`, "", "must be a JSON object"},
		{"null root", `null`, "", "must be a JSON object"},
		{"unknown top operator", `{"$where":"x"}`, "$where", "unknown operator"},
		{"unknown field operator", `{"payout":{"$regex":"x"}}`, "payout.$regex", "unknown operator"},
		{"mixed operator and key", `{"a":{"$eq":1,"b":2}}`, "a.b", "cannot also hold plain keys"},
		{"$gte not number", `{"payout":{"$gte":true}}`, "payout.$gte", "must be a number"},
		{"$gte array", `{"payout":{"$gte":[1]}}`, "payout.$gte", "must be a number"},
		{"$in not array", `{"country":{"$in":"BR"}}`, "country.$in", "must be an array"},
		{"$nin not array", `{"country":{"$nin":1}}`, "country.$nin", "must be an array"},
		{"$exists not bool", `{"a":{"$exists":1}}`, "a.$exists", "true or false"},
		{"$and empty", `{"$and":[]}`, "$and", "non-empty array"},
		{"$or not array", `{"$or":{"a":1}}`, "$or", "non-empty array"},
		{"$or element", `{"$or":[{"a":1},2]}`, "$or[1]", "must be a filter object"},
		{"nested error path", `{"$or":[{"a":1},{"b":{"$in":3}}]}`, "$or[1].b.$in", "must be an array"},
		{"$not not object", `{"$not":[1]}`, "$not", "must be a filter object"},
		{"field $not literal", `{"a":{"$not":1}}`, "a.$not", "object of operators"},
		{"empty segment", `{"a..b":1}`, "a..b", "empty segment"},
		{"empty key", `{"":1}`, "", "empty segment"},
		{"duplicate key", `{"a":1,"a":2}`, "", "appears twice"},
		{"long path", `{"` + strings.Repeat("a", MaxPath+1) + `":1}`, strings.Repeat("a", MaxPath+1), "limit is 256"},
		{"long list", `{"a":{"$in":[` + strings.TrimSuffix(strings.Repeat("1,", MaxList+1), ",") + `]}}`, "a.$in", "limit is 256"},
		{"too many conditions", manyConditions(MaxConditions + 1), "", "more than 256 conditions"},
		{"too deep", strings.Repeat(`{"$not":`, MaxDepth+2) + `{"a":1}` + strings.Repeat(`}`, MaxDepth+2), "", "nested more than 8"},
		{"json too deep", `{"a":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}`, "", "nested more than 32"},
		{"NUL in string", `{"a":"x\u0000"}`, "", "NUL character"},
		{"NUL in key", `{"a\u0000":1}`, "", "NUL character"},
		{"number overflows", `{"a":{"$gt":1e400}}`, "", "out of range"},
		{"number underflows", `{"a":1e-400}`, "", "out of range"},
		{"too big", `{"a":"` + strings.Repeat("x", MaxBytes) + `"}`, "", "the limit is 16384"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(tt.filter))
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("Compile = %v, want an *Error", err)
			}
			if tt.path != "" && fe.Path != tt.path {
				t.Errorf("Path = %q, want %q (%v)", fe.Path, tt.path, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
		})
	}
}

func manyConditions(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f%d":1`, i)
	}
	b.WriteString("}")
	return b.String()
}

func TestJSONIsCompact(t *testing.T) {
	f, err := Compile([]byte(" {\"a\" : { \"$gte\" : 1 } }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.String(); got != `{"a":{"$gte":1}}` {
		t.Errorf("String = %s", got)
	}
	// Text a JSON store would refuse (a lone surrogate, bytes that are not
	// UTF-8) comes back as valid UTF-8; HTML characters stay as written.
	f, err = Compile([]byte("{\"a\":\"<\\ud800>\xff\",\"b\":0.0}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.String(); got != "{\"a\":\"<\ufffd>\ufffd\",\"b\":0.0}" {
		t.Errorf("String = %s", got)
	}
}

func TestRejecting(t *testing.T) {
	var c Cache
	approved, _ := c.Compile([]byte(`{"status":"approved"}`))
	again, _ := c.Compile([]byte(`{"status":"approved"}`))
	if approved != again {
		t.Error("Cache compiled the same text twice")
	}
	if _, err := c.Compile([]byte(`{"$bad":1}`)); err == nil {
		t.Error("Cache accepted an invalid filter")
	}
	rich, _ := c.Compile([]byte(`{"payout":{"$gte":10}}`))
	eps := []Endpoint{{1, approved}, {2, rich}}
	if got := Rejecting(eps, []byte(`{"status":"approved","payout":1}`)); fmt.Sprint(got) != "[2]" {
		t.Errorf("Rejecting = %v, want [2]", got)
	}
	if got := Rejecting(eps, []byte(`{"status":"approved","payout":10}`)); got != nil {
		t.Errorf("Rejecting = %v, want none", got)
	}
	if got := Rejecting(eps, []byte(`nope`)); fmt.Sprint(got) != "[1 2]" {
		t.Errorf("Rejecting(invalid) = %v, want [1 2]", got)
	}
	// Endpoints sharing one compiled filter each get its verdict.
	shared := []Endpoint{{1, approved}, {2, rich}, {3, approved}, {4, rich}}
	if got := Rejecting(shared, []byte(`{"status":"rejected","payout":50}`)); fmt.Sprint(got) != "[1 3]" {
		t.Errorf("Rejecting(shared) = %v, want [1 3]", got)
	}
	if got := Rejecting(nil, []byte(`{}`)); got != nil {
		t.Errorf("Rejecting(no endpoints) = %v", got)
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`{"status":"approved","payout":{"$gte":1},"country":{"$in":["BR","PT"]}}`,
		`{"$or":[{"a":1},{"$not":{"b":{"$exists":true}}}]}`,
		`{"a.b.0":{"$not":{"$lt":"x"}},"c":[1,{"d":null}]}`,
		`{"a":{"$nin":[1,"2",true,null]}}`, `[]`, `{"a":`, `{"$and":[{}]}`,
	} {
		f.Add([]byte(s), []byte(`{"a":{"b":[1,"2"]},"status":"approved","payout":"3.5"}`))
	}
	f.Fuzz(func(t *testing.T, raw, payload []byte) {
		flt, err := Compile(raw)
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		flt.Match(payload)
		// The compact form compiles again to the same behaviour.
		again, err := Compile(flt.JSON())
		if err != nil {
			t.Fatalf("compact form %s does not compile: %v", flt.JSON(), err)
		}
		if again.Match(payload) != flt.Match(payload) {
			t.Fatalf("compact form matches differently")
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	f, err := Compile([]byte(`{"status":"approved","payout":{"$gte":1},"country":{"$in":["BR","PT"]}}`))
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"type":"conversion.approved","click_id":"c-0123456789","payout":12.50,"currency":"USD","status":"approved","country":"PT","pad":"` + strings.Repeat("x", 400) + `"}`)
	b.Run("match", func(b *testing.B) {
		for b.Loop() {
			if !f.Match(payload) {
				b.Fatal("no match")
			}
		}
	})
	d, _ := Decode(payload)
	b.Run("decoded", func(b *testing.B) {
		for b.Loop() {
			if !f.MatchDocument(d) {
				b.Fatal("no match")
			}
		}
	})
}
