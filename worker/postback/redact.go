package postback

import "strings"

// redactedMark replaces every hidden value.
const redactedMark = "***"

// Redact returns rawURL fit for logs and the attempt log: every query value,
// the user info and the fragment become "***", and so does every path
// segment or query key that holds a macro. Click ids, transaction ids and
// payouts travel in exactly those places and must never be logged; query
// values written literally in the template are hidden too, because trackers
// put API keys there.
//
// rawURL may be a template or a rendered URL. Only a template shows which
// path segments come from event data, so prefer Template.Redacted when the
// template is at hand. Redact never fails: malformed input is redacted as far
// as it can be split.
func Redact(rawURL string) string {
	rest, fragment, hasFragment := strings.Cut(rawURL, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")

	var b strings.Builder
	b.Grow(len(rawURL))

	path := rest
	if scheme, afterScheme, ok := strings.Cut(rest, "://"); ok {
		authority, p, hasPath := strings.Cut(afterScheme, "/")
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			authority = redactedMark + authority[at:]
		}
		b.WriteString(scheme)
		b.WriteString("://")
		b.WriteString(authority)
		path = ""
		if hasPath {
			b.WriteByte('/')
			path = p
		}
	}
	for i, segment := range strings.Split(path, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		if hasMacro(segment) {
			segment = redactedMark
		}
		b.WriteString(segment)
	}

	if hasQuery {
		b.WriteByte('?')
		for i, pair := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			key, _, hasValue := strings.Cut(pair, "=")
			switch {
			case pair == "":
			case !hasValue || hasMacro(key):
				// A bare item may be a value in its own right ("?{click_id}"
				// renders to "?abc123"), so it is hidden like one.
				b.WriteString(redactedMark)
				if hasValue {
					b.WriteString("=" + redactedMark)
				}
			default:
				b.WriteString(key + "=" + redactedMark)
			}
		}
	}

	if hasFragment {
		b.WriteByte('#')
		if fragment != "" {
			b.WriteString(redactedMark)
		}
	}
	return b.String()
}

func hasMacro(s string) bool {
	return strings.ContainsAny(s, "{}")
}
