package account

import "strings"

func errorFor(p Page, form string) string {
	if p.Form == form {
		return p.Error
	}
	return ""
}

// state is the two-factor panel's data-state, for tests.
func state(p Page) string {
	switch {
	case p.Enabled:
		return "on"
	case p.Setup != nil || p.Pending:
		return "pending"
	}
	return "off"
}

// recoveryText puts one code a line, to copy or print.
func recoveryText(codes []string) string { return strings.Join(codes, "\n") }

// GroupSecret writes a base32 secret in groups of four, as apps show keys
// and people type them (apps ignore the spaces).
func GroupSecret(secret string) string {
	var b strings.Builder
	for i, r := range secret {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}
