// Package egress turns an endpoint's stored egress row (DESIGN §17: proxy,
// CAs, client certificate, receiver credentials) into the sender's Egress,
// opening its sealed values. The worker and the dashboard's test fire both
// build through Build, so a test fire leaves as a delivery does.
package egress

import (
	"errors"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/sender"
)

// Proxy choices besides a URL.
const (
	ProxyDefault = ""       // HOOKLINE_EGRESS_PROXY, or direct without one
	ProxyDirect  = "direct" // never through a proxy
)

// Credential kinds.
const (
	AuthNone   = "none"
	AuthBasic  = "basic"
	AuthOAuth2 = "oauth2"
)

// Key is the sender's cache key for an endpoint's client.
func Key(endpointID int64) string { return "endpoint " + strconv.FormatInt(endpointID, 10) }

// Build is row's Egress for revision rev, or nil when row changes nothing
// (an endpoint whose settings were all cleared goes out through the
// shared client again). now is for the OAuth2 token's expiry.
func Build(row db.EndpointEgress, rev int64, box *secretbox.Box, now func() time.Time) (*sender.Egress, error) {
	e := &sender.Egress{Key: Key(row.EndpointID), Rev: rev}
	used := false
	switch row.Proxy {
	case ProxyDefault:
	case ProxyDirect:
		e.Direct, used = true, true
	default:
		p, err := sender.ParseProxy(row.Proxy)
		if err != nil {
			return nil, errors.New("egress proxy: " + err.Error())
		}
		e.Proxy, used = p, true
	}
	if row.CaBundle != "" {
		cas, err := sender.ParseCAs([]byte(row.CaBundle))
		if err != nil {
			return nil, errors.New("CA bundle: " + err.Error())
		}
		e.CAs, used = cas, true
	}
	if row.ClientCert != "" {
		key, err := box.OpenEgress(row.EndpointID, secretbox.EgressClientKey, row.ClientKey)
		if err != nil {
			return nil, errors.New("client key: " + err.Error())
		}
		// Validity is checked at save and at each send (an expired
		// certificate fails its deliveries clearly), not here.
		cert, err := sender.ClientCert([]byte(row.ClientCert), key, certTime(row))
		if err != nil {
			return nil, errors.New("client certificate: " + err.Error())
		}
		e.Certificate, used = cert, true
	}
	switch row.AuthKind {
	case AuthBasic, AuthOAuth2:
		secret, err := box.OpenEgress(row.EndpointID, secretbox.EgressAuthSecret, row.AuthSecret)
		if err != nil {
			return nil, errors.New("credentials: " + err.Error())
		}
		if row.AuthKind == AuthBasic {
			e.Auth = sender.Basic(row.AuthUsername, string(secret))
		} else {
			cfg := clientcredentials.Config{
				ClientID: row.AuthUsername, ClientSecret: string(secret),
				TokenURL: row.OauthTokenUrl, Scopes: row.OauthScopes,
			}
			if row.OauthAudience != "" {
				cfg.EndpointParams = url.Values{"audience": {row.OauthAudience}}
			}
			e.Auth = sender.OAuth2(cfg, now)
		}
		used = true
	}
	if !used {
		return nil, nil
	}
	return e, nil
}

// certTime is a moment the stored certificate was valid at: it was
// checked when saved.
func certTime(row db.EndpointEgress) time.Time {
	if row.ClientCertExpiresAt != nil {
		return row.ClientCertExpiresAt.Add(-time.Second)
	}
	return time.Now()
}
