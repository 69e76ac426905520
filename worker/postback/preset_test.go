package postback

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPresets(t *testing.T) {
	wantParams := map[string][]string{
		"voluum":   {"cid", "payout", "txid"},
		"binom":    {"cnv_id", "payout", "cnv_status"},
		"keitaro":  {"subid", "status", "payout", "tid"},
		"everflow": {"transaction_id", "amount"},
		"affise":   {"clickid", "status", "sum"},
		"cake":     {"r", "t"},
		"tune":     {"transaction_id", "amount", "adv_sub", "status"},
		"redtrack": {"clickid", "sum", "type"},
		"custom":   {"click_id", "payout"},
	}
	wantNames := []string{"Voluum", "Binom", "Keitaro", "Everflow", "Affise", "CAKE (#token#)", "TUNE (HasOffers)", "RedTrack", "Custom"}

	presets := Presets()
	var names []string
	for _, p := range presets {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("preset names = %q, want %q", names, wantNames)
	}

	sample := SampleValues("evt_sample", time.Unix(1_760_000_000, 0))
	for _, p := range presets {
		t.Run(p.ID, func(t *testing.T) {
			tmpl, err := ParseStyle(p.Template, p.MacroStyle())
			if err != nil {
				t.Fatalf("preset template does not parse: %v", err)
			}
			if ws := tmpl.Warnings(); len(ws) > 0 {
				t.Errorf("preset template has warnings: %+v", ws)
			}
			if ws := p.MissingParams(tmpl); len(ws) > 0 {
				t.Errorf("preset template lacks its own required parameters: %+v", ws)
			}
			rendered, err := tmpl.Render(sample)
			if err != nil {
				t.Fatalf("Render with SampleValues: %v", err)
			}
			u, err := url.Parse(rendered)
			if err != nil {
				t.Fatalf("rendered URL %q does not parse: %v", rendered, err)
			}
			if !strings.HasSuffix(u.Hostname(), ".example") {
				t.Errorf("host %q is not a reserved example domain", u.Hostname())
			}
			query := u.Query()
			for _, name := range wantParams[p.ID] {
				if query.Get(name) == "" {
					t.Errorf("rendered query %q lacks tracker parameter %q", u.RawQuery, name)
				}
			}
			if p.Method != "GET" {
				t.Errorf("Method = %q, want GET", p.Method)
			}
			if p.Help == "" {
				t.Error("preset has no help text")
			}
			macros := tmpl.Macros()
			for _, param := range p.Params {
				if !query.Has(param.Name) {
					t.Errorf("documented parameter %q is not in the template", param.Name)
				}
				if param.Macro != "" && !slices.Contains(macros, param.Macro) {
					t.Errorf("parameter %q names macro %q, which the template does not use", param.Name, param.Macro)
				}
				if param.Help == "" {
					t.Errorf("parameter %q has no help text", param.Name)
				}
			}
			if len(p.ValueMaps) > 0 {
				r := &Rules{ValueMaps: p.ValueMaps, Unmapped: UnmappedFail}
				if err := r.Validate(); err != nil {
					t.Fatalf("preset value maps: %v", err)
				}
				if _, err := tmpl.RenderRules(r.Sample(sample), r); err != nil {
					t.Errorf("the sample adapted to the preset's maps does not render: %v", err)
				}
			}
			// The sample click id must survive encoding intact: a tracker
			// decoding the query must see exactly the payload's value.
			for _, param := range p.Params {
				if param.Macro == "click_id" && query.Get(param.Name) != "abc 123&x=1" {
					t.Errorf("%s = %q after decoding, want the sample click id", param.Name, query.Get(param.Name))
				}
			}
		})
	}
}

func TestPresetByID(t *testing.T) {
	t.Run("known id", func(t *testing.T) {
		p, ok := PresetByID("keitaro")
		if !ok || p.Name != "Keitaro" {
			t.Fatalf("PresetByID(keitaro) = %+v, %v", p, ok)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		if p, ok := PresetByID("nope"); ok {
			t.Fatalf("PresetByID(nope) = %+v, want not found", p)
		}
	})
	t.Run("ids are unique", func(t *testing.T) {
		seen := map[string]bool{}
		for _, p := range Presets() {
			if seen[p.ID] {
				t.Fatalf("duplicate preset id %q", p.ID)
			}
			seen[p.ID] = true
		}
	})
	t.Run("callers cannot change the presets", func(t *testing.T) {
		Presets()[0].Params[0].Name = "changed"
		if got := Presets()[0].Params[0].Name; got == "changed" {
			t.Fatal("modifying a returned preset changed the next call's result")
		}
	})
}

func TestSampleValues(t *testing.T) {
	now := time.Unix(1_760_000_000, 0)
	v := SampleValues("evt_1", now)
	if v.EventID != "evt_1" || !v.Timestamp.Equal(now) || v.Attempt != 1 || v.EventType == "" {
		t.Fatalf("built-ins not filled from arguments: %+v", v)
	}
	for _, field := range []string{"click_id", "payout", "transaction_id", "status", "currency", "amount", "sum"} {
		if _, ok := v.Payload[field]; !ok {
			t.Errorf("sample payload lacks %q", field)
		}
	}
	v.Payload["click_id"] = nil
	if string(SampleValues("evt_1", now).Payload["click_id"]) != `"abc 123&x=1"` {
		t.Fatal("SampleValues shares its payload map between calls")
	}
}

func TestPresetValueMaps(t *testing.T) {
	sample := SampleValues("e", time.Unix(1_760_000_000, 0))
	for id, want := range map[string]string{"keitaro": "status=sale", "affise": "status=1", "binom": "cnv_status=approved", "redtrack": "type=Purchase"} {
		p, _ := PresetByID(id)
		tmpl, _ := ParseStyle(p.Template, p.MacroStyle())
		r := &Rules{ValueMaps: p.ValueMaps}
		v := r.Sample(sample)
		v.EventType = "conversion.approved"
		got, err := tmpl.RenderRules(v, r)
		if err != nil || !strings.Contains(got, want) {
			t.Errorf("%s: %q, %v; want it to contain %q", id, got, err, want)
		}
	}
}
