package web

// Form fields shared by the dashboard's and the portal's endpoint forms.

import (
	"fmt"
	"sort"
	"strings"
)

// parseHeaderLines reads the form's custom headers, one "Name: value" a
// line (blank lines skipped), and what is wrong with them, if anything.
func parseHeaderLines(text string) (map[string]string, string) {
	headers := map[string]string{}
	msg := ""
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			msg = fmt.Sprintf("line %d is not \"Name: value\"", i+1)
			continue
		}
		headers[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return headers, msg
}

// formEventTypes splits the form's event types (commas, spaces or lines).
func formEventTypes(raw string) []string {
	return strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == '\n' || r == ' ' || r == '\t' || r == '\r' })
}

func sortedErrors(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+" "+v)
	}
	sort.Strings(out)
	return out
}
