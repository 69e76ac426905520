// Package egressform renders an endpoint's egress form (DESIGN §17): the
// proxy it leaves through, the CAs it trusts, its client certificate and
// the credentials its receiver checks. Secrets are typed in and never shown
// again: the form says which are stored, and an empty secret field keeps
// the stored one.
package egressform

import (
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
)

// Proxy choices of the form's proxy field.
const (
	ProxyDefault = "default"
	ProxyDirect  = "direct"
	ProxyOther   = "other"
)

// Form is the egress form with its values and errors.
type Form struct {
	EndpointID   int64
	EndpointName string
	CSRF         string
	// DefaultProxy is HOOKLINE_EGRESS_PROXY without credentials, "" when
	// none is set (the default is then direct).
	DefaultProxy string

	Proxy    string // ProxyDefault | ProxyDirect | ProxyOther
	ProxyURL string
	CABundle string // PEM: CA certificates are public
	// StoredCert is the stored client certificate's subject ("" for
	// none) and StoredCertExpires its expiry: the certificate and its key
	// are never shown again.
	StoredCert        string
	StoredCertExpires *time.Time
	RemoveCert        bool
	AuthType          string // none | basic | oauth2
	// StoredSecret: a password or client secret of AuthType is stored;
	// left empty, it is kept.
	StoredSecret bool
	Username     string
	ClientID     string
	TokenURL     string
	Scopes       string // space-separated
	Audience     string

	// Errors maps a field name to its problem; Problems lists them for
	// the summary above the form.
	Errors   map[string]string
	Problems []string
}

// Field names, shared with the handler that reads them.
const (
	FieldProxy        = "proxy"
	FieldProxyURL     = "proxy_url"
	FieldCABundle     = "ca_bundle"
	FieldClientCert   = "client_cert"
	FieldClientKey    = "client_key"
	FieldRemoveCert   = "client_cert_remove"
	FieldAuthType     = "auth_type"
	FieldUsername     = "basic_username"
	FieldPassword     = "basic_password"
	FieldClientID     = "oauth_client_id"
	FieldClientSecret = "oauth_client_secret"
	FieldTokenURL     = "oauth_token_url"
	FieldScopes       = "oauth_scopes"
	FieldAudience     = "oauth_audience"
)

func (f Form) action() string { return "/endpoints/" + strconv.FormatInt(f.EndpointID, 10) + "/egress" }
func (f Form) back() string   { return "/endpoints/" + strconv.FormatInt(f.EndpointID, 10) }

func (f Form) proxyOptions() []components.Option {
	def := "Default: direct (no HOOKLINE_EGRESS_PROXY)"
	if f.DefaultProxy != "" {
		def = "Default: " + f.DefaultProxy + " (HOOKLINE_EGRESS_PROXY)"
	}
	return []components.Option{{Value: ProxyDefault, Label: def}, {Value: ProxyDirect, Label: "Direct, never through a proxy"}, {Value: ProxyOther, Label: "Another proxy"}}
}

func authOptions() []components.Option {
	return []components.Option{{Value: "none", Label: "None"}, {Value: "basic", Label: "HTTP basic"}, {Value: "oauth2", Label: "OAuth2 client credentials"}}
}

func (f Form) secretHelp(what string) string {
	if f.StoredSecret {
		return "A " + what + " is stored; leave this empty to keep it."
	}
	return ""
}

func (f Form) certHelp() string {
	if f.StoredCert == "" {
		return "PEM: the certificate, then its intermediates. Needs its private key below."
	}
	h := "Stored: " + f.StoredCert
	if f.StoredCertExpires != nil {
		h += ", expires " + f.StoredCertExpires.UTC().Format(time.DateOnly)
	}
	return h + ". Paste a renewal here; leave both fields empty to keep it."
}
