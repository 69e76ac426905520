package replica

import (
	"strings"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	const primary = "postgres://hookline@127.0.0.1:5432/hookline"
	cases := []struct {
		name    string
		env     map[string]string
		primary string
		want    Config
		wantErr string
	}{
		{"unset", nil, primary, Config{LagNotice: DefaultLagNotice}, ""},
		{"a replica", map[string]string{"HOOKLINE_READ_DATABASE_URL": " postgres://r@127.0.0.1:5433/hookline "}, primary,
			Config{URL: "postgres://r@127.0.0.1:5433/hookline", LagNotice: DefaultLagNotice}, ""},
		{"a notice threshold", map[string]string{"HOOKLINE_READ_DATABASE_URL": "postgres://r@127.0.0.1/h", "HOOKLINE_READ_LAG_NOTICE": "30s"}, primary,
			Config{URL: "postgres://r@127.0.0.1/h", LagNotice: 30 * time.Second}, ""},
		{"a bad notice threshold", map[string]string{"HOOKLINE_READ_LAG_NOTICE": "soon"}, primary, Config{}, "HOOKLINE_READ_LAG_NOTICE"},
		{"a zero notice threshold", map[string]string{"HOOKLINE_READ_LAG_NOTICE": "0s"}, primary, Config{}, "HOOKLINE_READ_LAG_NOTICE"},
		{"without DATABASE_URL", map[string]string{"HOOKLINE_READ_DATABASE_URL": "postgres://r@127.0.0.1/h"}, "", Config{}, "set only with DATABASE_URL"},
		{"unparsable", map[string]string{"HOOKLINE_READ_DATABASE_URL": "postgres://r@127.0.0.1:port/h"}, primary, Config{}, "HOOKLINE_READ_DATABASE_URL: cannot be parsed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := FromEnv(func(k string) string { return tc.env[k] }, tc.primary)
			if tc.wantErr != "" {
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr) {
					t.Fatalf("errors %v, want one naming %q", errs, tc.wantErr)
				}
				return
			}
			if len(errs) != 0 || got != tc.want {
				t.Fatalf("got %+v %v, want %+v", got, errs, tc.want)
			}
		})
	}
}
