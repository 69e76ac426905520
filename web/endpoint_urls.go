package web

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/ssrf"
)

func checkWebhookURL(raw string, guard *ssrf.Guard) string {
	if raw == "" {
		return "is required"
	}
	if utf8.RuneCountInString(raw) > maxURLLength {
		return fmt.Sprintf("must be at most %d characters", maxURLLength)
	}
	if strings.ContainsAny(raw, "{}") {
		return "contains { or }: macros are for postback endpoints; webhooks send the event as a signed JSON body"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a valid URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "must start with https:// or http://"
	}
	if u.Host == "" || u.Hostname() == "" {
		return "must include a host name"
	}
	if u.User != nil {
		return "must not contain a user name or password; use a custom Authorization header"
	}
	if msg := checkPort(u.Port()); msg != "" {
		return msg
	}
	if err := guard.CheckHost(u.Hostname()); err != nil {
		return blockedMessage(err)
	}
	return placeholderHost(u.Hostname())
}

// placeholderHost refuses the presets' reserved example domain, so a preset
// saved without its tracker's real domain is caught at once.
func placeholderHost(host string) string {
	if strings.HasSuffix(strings.ToLower(host), "your-domain.example") {
		return "replace " + host + " with your tracker's domain"
	}
	return ""
}

func checkPostbackTemplate(raw string, style postback.Style, guard *ssrf.Guard) string {
	if raw == "" {
		return "is required"
	}
	if utf8.RuneCountInString(raw) > maxURLLength {
		return fmt.Sprintf("must be at most %d characters", maxURLLength)
	}
	t, err := postback.ParseStyle(raw, style)
	if err != nil {
		return err.Error()
	}
	// Parse guarantees the host has no macros, so the raw template's host is
	// the destination.
	host := postbackHost(t.String())
	if host == "" {
		return "must include a host name"
	}
	if msg := checkPort(postbackPort(t.String())); msg != "" {
		return msg
	}
	if err := guard.CheckHost(host); err != nil {
		return blockedMessage(err)
	}
	if msg := placeholderHost(host); msg != "" {
		return msg
	}
	if strings.Contains(raw, "POSTBACK-KEY") {
		return "replace POSTBACK-KEY with the key from your tracker's postback URL"
	}
	return ""
}

func postbackHost(tmpl string) string {
	u, err := url.Parse("http://" + postbackAuthority(tmpl))
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// postbackPort is the port a template names, or "".
func postbackPort(tmpl string) string {
	u, err := url.Parse("http://" + postbackAuthority(tmpl))
	if err != nil {
		return ""
	}
	return u.Port()
}

// checkPort refuses a port no connection can use: url.Parse accepts any
// digits (":0", ":99999"), and every delivery would then fail.
func checkPort(port string) string {
	if port == "" {
		return ""
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "has port " + port + ": a port must be between 1 and 65535"
	}
	return ""
}

// blockedMessage explains a destination the SSRF guard refuses (the guard's
// message says how HOOKLINE_ALLOW_NETWORKS opens it, when it can); a
// partner guard's refusal is worded for the partner (destination.go).
func blockedMessage(err error) string {
	var be *ssrf.BlockedError
	if errors.As(err, &be) && be.Partner() {
		return partnerBlockedMessage(be)
	}
	return "points to a " + err.Error()
}

// postbackHostPort is the host[:port] of a template, for display.
func postbackHostPort(tmpl string) string {
	u, err := url.Parse("http://" + postbackAuthority(tmpl))
	if err != nil {
		return ""
	}
	return u.Host
}

// postbackAuthority cuts a template down to its authority (user info
// removed); Parse has ensured it holds no macros.
func postbackAuthority(tmpl string) string {
	rest := tmpl
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	return rest
}
