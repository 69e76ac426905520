package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/egress"
	"github.com/hookline/hookline/worker/sender"
)

// egressInput is an endpoint's "egress" object in POST and PATCH
// /api/v1/endpoints (DESIGN §17). It replaces the stored settings whole;
// a secret (client_key, password, client_secret) given as "********"
// keeps the stored one. Absent from a PATCH: the settings are unchanged.
type egressInput struct {
	// Proxy: "" the default proxy, "direct", or http://host:port.
	Proxy string `json:"proxy"`
	// CABundle: PEM CA certificates trusted in addition to the system's.
	CABundle   string `json:"ca_bundle"`
	ClientCert string `json:"client_cert"`
	ClientKey  string `json:"client_key"`
	Auth       struct {
		Type         string   `json:"type"` // none | basic | oauth2
		Username     string   `json:"username"`
		Password     string   `json:"password"`
		ClientID     string   `json:"client_id"`
		ClientSecret string   `json:"client_secret"`
		TokenURL     string   `json:"token_url"`
		Scopes       []string `json:"scopes"`
		Audience     string   `json:"audience"`
	} `json:"auth"`
}

// egressJSON is what the API shows of an endpoint's egress settings: what
// is in use, never a secret.
type egressJSON struct {
	Proxy             string     `json:"proxy"`
	CustomCA          bool       `json:"custom_ca"`
	ClientCertSubject string     `json:"client_cert_subject"`
	ClientCertExpires *time.Time `json:"client_cert_expires_at"`
	AuthType          string     `json:"auth_type"`
	Username          string     `json:"username,omitempty"`
	TokenURL          string     `json:"token_url,omitempty"`
	Scopes            []string   `json:"scopes,omitempty"`
	Audience          string     `json:"audience,omitempty"`
}

func egressView(r db.EndpointEgress) *egressJSON {
	return &egressJSON{
		Proxy: r.Proxy, CustomCA: r.CaBundle != "", ClientCertSubject: r.ClientCertSubject,
		ClientCertExpires: r.ClientCertExpiresAt, AuthType: r.AuthKind, Username: r.AuthUsername,
		TokenURL: r.OauthTokenUrl, Scopes: r.OauthScopes, Audience: r.OauthAudience,
	}
}

// egressPatch reads the "egress" object of a request body, if any.
func egressPatch(body []byte) (*egressInput, error) {
	var b struct {
		Egress *egressInput `json:"egress"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, invalidField("egress", "must be an object")
	}
	return b.Egress, nil
}

// validateEgress checks in against the stored row (cur, nil for none) at
// now, and returns the row to store, with secrets still plain in the
// sealed columns' places (sealEgress seals them for the endpoint).
func validateEgress(in egressInput, cur *db.EndpointEgress, now time.Time) (db.EndpointEgressSetParams, []byte, []byte, error) {
	p := db.EndpointEgressSetParams{Proxy: strings.TrimSpace(in.Proxy), OauthScopes: []string{}}
	switch p.Proxy {
	case egress.ProxyDefault, egress.ProxyDirect:
	default:
		u, err := sender.ParseProxy(p.Proxy)
		if err != nil {
			return p, nil, nil, invalidField("egress.proxy", err.Error())
		}
		if u.User != nil {
			return p, nil, nil, invalidField("egress.proxy", "must carry no credentials (an endpoint's proxy is shown); declare a proxy with credentials as HOOKLINE_EGRESS_PROXY")
		}
		p.Proxy = sender.Redacted(u)
	}
	if in.CABundle = strings.TrimSpace(in.CABundle); in.CABundle != "" {
		if _, err := sender.ParseCAs([]byte(in.CABundle)); err != nil {
			return p, nil, nil, invalidField("egress.ca_bundle", err.Error())
		}
		p.CaBundle = in.CABundle + "\n"
	}
	var key, secret []byte
	if in.ClientKey == maskedValue && cur != nil && cur.ClientCert != "" {
		in.ClientKey = "" // kept: saveEgress copies the stored one
	}
	if in.ClientCert = strings.TrimSpace(in.ClientCert); in.ClientCert != "" {
		if in.ClientKey == "" && (cur == nil || cur.ClientKey == nil) {
			return p, nil, nil, invalidField("egress.client_key", "is required with client_cert (PEM private key)")
		}
		if in.ClientKey != "" {
			key = []byte(in.ClientKey)
		}
		p.ClientCert = in.ClientCert + "\n"
	} else if in.ClientKey != "" {
		return p, nil, nil, invalidField("egress.client_cert", "is required with client_key")
	}
	switch in.Auth.Type {
	case "", egress.AuthNone:
		p.AuthKind = egress.AuthNone
	case egress.AuthBasic:
		p.AuthKind, p.AuthUsername = egress.AuthBasic, in.Auth.Username
		if in.Auth.Username == "" || strings.Contains(in.Auth.Username, ":") {
			return p, nil, nil, invalidField("egress.auth.username", "is required, without a colon")
		}
		secret = []byte(in.Auth.Password)
		if in.Auth.Password == "" {
			return p, nil, nil, invalidField("egress.auth.password", "is required")
		}
	case egress.AuthOAuth2:
		p.AuthKind, p.AuthUsername = egress.AuthOAuth2, in.Auth.ClientID
		if in.Auth.ClientID == "" {
			return p, nil, nil, invalidField("egress.auth.client_id", "is required")
		}
		u, err := url.Parse(in.Auth.TokenURL)
		if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
			return p, nil, nil, invalidField("egress.auth.token_url", "must be an http(s) URL")
		}
		p.OauthTokenUrl, p.OauthAudience = in.Auth.TokenURL, in.Auth.Audience
		if in.Auth.Scopes != nil {
			p.OauthScopes = in.Auth.Scopes
		}
		secret = []byte(in.Auth.ClientSecret)
		if in.Auth.ClientSecret == "" {
			return p, nil, nil, invalidField("egress.auth.client_secret", "is required")
		}
	default:
		return p, nil, nil, invalidField("egress.auth.type", "must be none, basic or oauth2")
	}
	if string(secret) == maskedValue {
		if cur == nil || cur.AuthSecret == nil || cur.AuthKind != p.AuthKind {
			return p, nil, nil, invalidField("egress.auth", "no stored secret to keep")
		}
		secret = nil
	}
	if p.ClientCert != "" {
		// A kept key is checked against the certificate once opened
		// (saveEgress).
		if key != nil {
			cert, err := sender.ClientCert([]byte(p.ClientCert), key, now)
			if err != nil {
				return p, nil, nil, invalidField(certField(err), err.Error())
			}
			p.ClientCertSubject = cert.Leaf.Subject.String()
			exp := cert.Leaf.NotAfter
			p.ClientCertExpiresAt = &exp
		}
	}
	return p, key, secret, nil
}

// saveEgress validates and stores an endpoint's egress settings, sealing
// its secrets for it (a kept secret is copied sealed as it was).
func (s *Server) saveEgress(ctx context.Context, q *db.Queries, endpointID int64, in egressInput) (db.EndpointEgress, error) {
	var cur *db.EndpointEgress
	if row, err := q.EndpointEgressGet(ctx, endpointID); err == nil {
		cur = &row
	} else if !db.NoRows(err) {
		return db.EndpointEgress{}, fmt.Errorf("read egress settings: %w", err)
	}
	p, key, secret, err := validateEgress(in, cur, s.now())
	if err != nil {
		return db.EndpointEgress{}, err
	}
	p.EndpointID = endpointID
	if p.ClientCert != "" {
		if key == nil { // kept
			plain, err := s.box.OpenEgress(endpointID, secretbox.EgressClientKey, cur.ClientKey)
			if err != nil {
				return db.EndpointEgress{}, invalidField("egress.client_key", "the stored key cannot be opened; enter it again")
			}
			cert, err := sender.ClientCert([]byte(p.ClientCert), plain, s.now())
			if err != nil {
				return db.EndpointEgress{}, invalidField(certField(err), "with the stored key: "+err.Error())
			}
			p.ClientKey = cur.ClientKey
			p.ClientCertSubject = cert.Leaf.Subject.String()
			exp := cert.Leaf.NotAfter
			p.ClientCertExpiresAt = &exp
		} else if p.ClientKey, err = s.box.SealEgress(endpointID, secretbox.EgressClientKey, key); err != nil {
			return db.EndpointEgress{}, err
		}
	}
	switch {
	case p.AuthKind == egress.AuthNone:
	case secret == nil:
		p.AuthSecret = cur.AuthSecret
	default:
		if p.AuthSecret, err = s.box.SealEgress(endpointID, secretbox.EgressAuthSecret, secret); err != nil {
			return db.EndpointEgress{}, err
		}
	}
	row, err := q.EndpointEgressSet(ctx, p)
	if err != nil {
		return db.EndpointEgress{}, fmt.Errorf("save egress settings: %w", err)
	}
	return db.EndpointEgress(row), nil
}

// endpointEgress is an endpoint's egress row, nil when it has none.
func (s *Server) endpointEgress(ctx context.Context, endpointID int64) (*db.EndpointEgress, error) {
	row, err := s.q.EndpointEgressGet(ctx, endpointID)
	if db.NoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read egress settings: %w", err)
	}
	return &row, nil
}

// certField is the field a client certificate check's error is about.
func certField(err error) string {
	if strings.HasPrefix(err.Error(), "key:") {
		return "egress.client_key"
	}
	return "egress.client_cert"
}
