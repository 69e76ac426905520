package web

// An endpoint's egress on the dashboard (DESIGN §17): the panel on its page
// and the operators' form. The form reads into the API's egress object and
// saves through saveEgress, so both validate, seal and store alike.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/egressform"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/worker/egress"
	"github.com/hookline/hookline/worker/sender"
)

// egressPanel is an endpoint's egress as its page shows it; portal leaves
// out the operator's proxy address and the credential's settings.
func (s *Server) egressPanel(ctx context.Context, id int64, portal, canOperate bool) (endpoint.Egress, error) {
	row, err := s.endpointEgress(ctx, id)
	if err != nil {
		return endpoint.Egress{}, err
	}
	v := endpoint.Egress{EndpointID: id, Credential: egress.AuthNone, Now: s.now(), CanOperate: canOperate && !portal}
	proxy := egress.ProxyDefault
	if row != nil {
		proxy = row.Proxy
	}
	switch {
	case proxy == egress.ProxyDirect:
		v.Proxy = proxyDirectName
	case proxy != egress.ProxyDefault:
		v.Proxy = proxy
	case s.cfg.EgressProxy != nil:
		v.Proxy = "default: " + sender.Redacted(s.cfg.EgressProxy)
	default:
		v.Proxy = "default: direct"
	}
	if portal && v.Proxy != proxyDirectName && v.Proxy != "default: direct" {
		v.Proxy = proxyHidden
	} else if portal {
		v.Proxy = proxyDirectName
	}
	if row == nil {
		return v, nil
	}
	if row.CaBundle != "" {
		cas, _ := sender.ParseCAs([]byte(row.CaBundle)) // checked when saved
		for _, c := range cas {
			v.CASubjects = append(v.CASubjects, c.Subject.String())
		}
	}
	v.ClientCert, v.ClientCertExpires = row.ClientCertSubject, row.ClientCertExpiresAt
	v.Credential = row.AuthKind
	if !portal {
		v.CredentialDetail = credentialDetail(*row)
	}
	return v, nil
}

// credentialDetail is what an operator sees of a credential: its settings,
// never its password or secret.
func credentialDetail(r db.EndpointEgress) string {
	switch r.AuthKind {
	case egress.AuthBasic:
		return "username " + r.AuthUsername
	case egress.AuthOAuth2:
		d := "client id " + r.AuthUsername + " · token URL " + r.OauthTokenUrl
		if len(r.OauthScopes) > 0 {
			d += " · scopes " + strings.Join(r.OauthScopes, " ")
		}
		if r.OauthAudience != "" {
			d += " · audience " + r.OauthAudience
		}
		return d
	}
	return ""
}

// endpointEgressPage: GET /endpoints/:id/egress (operator)
func (s *Server) endpointEgressPage(c echo.Context) error {
	e, cur, err := s.egressFormTarget(c)
	if err != nil {
		return err
	}
	f := s.egressFormOf(c, e, cur)
	if cur != nil {
		f.CABundle, f.Username, f.TokenURL = cur.CaBundle, cur.AuthUsername, cur.OauthTokenUrl
		f.Scopes, f.Audience = strings.Join(cur.OauthScopes, " "), cur.OauthAudience
		if cur.AuthKind == egress.AuthOAuth2 {
			f.ClientID, f.Username = cur.AuthUsername, ""
		}
		switch cur.Proxy {
		case egress.ProxyDefault:
		case egress.ProxyDirect:
			f.Proxy = egressform.ProxyDirect
		default:
			f.Proxy, f.ProxyURL = egressform.ProxyOther, cur.Proxy
		}
	}
	return s.render(c, http.StatusOK, egressform.Page(s.meta(c, "Egress of "+e.Name, layout.NavEndpoints), f))
}

// endpointEgressSave: POST /endpoints/:id/egress (operator) — validated,
// sealed and stored as the API's egress object is, audited without a
// secret; a problem re-renders the form (422) naming its field.
func (s *Server) endpointEgressSave(c echo.Context) error {
	e, cur, err := s.egressFormTarget(c)
	if err != nil {
		return err
	}
	f := s.egressFormOf(c, e, cur)
	f.Proxy, f.ProxyURL = c.FormValue(egressform.FieldProxy), strings.TrimSpace(c.FormValue(egressform.FieldProxyURL))
	f.CABundle, f.RemoveCert = c.FormValue(egressform.FieldCABundle), c.FormValue(egressform.FieldRemoveCert) != ""
	f.AuthType = c.FormValue(egressform.FieldAuthType)
	f.Username, f.ClientID = c.FormValue(egressform.FieldUsername), c.FormValue(egressform.FieldClientID)
	f.TokenURL, f.Scopes = strings.TrimSpace(c.FormValue(egressform.FieldTokenURL)), c.FormValue(egressform.FieldScopes)
	f.Audience = c.FormValue(egressform.FieldAudience)
	in, fieldErr := egressFormInput(c, f, cur)
	ctx := c.Request().Context()
	if fieldErr == nil {
		var row db.EndpointEgress
		fieldErr = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			q := s.q.WithTx(tx)
			var err error
			if row, err = s.saveEgress(ctx, q, e.ID, in); err != nil {
				return err
			}
			return audit(ctx, q, principalOf(c).actor(), "endpoint.egress_update", "endpoint", e.ID, egressAudit(row))
		})
	}
	var ae *apiError
	if fieldErr != nil && !errors.As(fieldErr, &ae) {
		return fieldErr
	}
	if ae != nil && ae.Status == http.StatusUnprocessableEntity {
		name, label := egressFormField(ae.Field)
		f.Errors[name] = ae.Message
		if strings.Contains(f.CABundle, "PRIVATE KEY") {
			f.CABundle = "" // a key pasted in the wrong field is not shown back
		}
		f.Problems = append(f.Problems, label+": "+ae.Message)
		return s.render(c, http.StatusUnprocessableEntity, egressform.Page(s.meta(c, "Egress of "+e.Name, layout.NavEndpoints), f))
	}
	if ae != nil {
		return ae
	}
	s.addFlash(c, layout.FlashSuccess, "Egress settings saved: the next delivery leaves with them.")
	return c.Redirect(http.StatusSeeOther, "/endpoints/"+strconv.FormatInt(e.ID, 10)+"#"+endpoint.EgressID)
}

// egressFormTarget is the endpoint of an egress form and its stored
// settings (nil for none).
func (s *Server) egressFormTarget(c echo.Context) (db.Endpoint, *db.EndpointEgress, error) {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return db.Endpoint{}, nil, err
	}
	ctx := c.Request().Context()
	e, err := s.q.EndpointGet(ctx, id)
	if err != nil {
		return db.Endpoint{}, nil, missing(err, "endpoint")
	}
	cur, err := s.endpointEgress(ctx, id)
	return e, cur, err
}

// egressFormOf is the form of e with what is stored and never shown again
// (the certificate's subject, whether a secret is stored).
func (s *Server) egressFormOf(c echo.Context, e db.Endpoint, cur *db.EndpointEgress) egressform.Form {
	f := egressform.Form{EndpointID: e.ID, EndpointName: e.Name, CSRF: principalOf(c).CSRF, Proxy: egressform.ProxyDefault,
		AuthType: egress.AuthNone, Errors: map[string]string{}}
	if s.cfg.EgressProxy != nil {
		f.DefaultProxy = sender.Redacted(s.cfg.EgressProxy)
	}
	if cur != nil {
		f.StoredCert, f.StoredCertExpires = cur.ClientCertSubject, cur.ClientCertExpiresAt
		f.AuthType, f.StoredSecret = cur.AuthKind, cur.AuthSecret != nil
	}
	return f
}

// egressFormInput is the form as the API's egress object: an empty secret
// keeps the stored one (as "********" does in the API), and empty
// certificate fields keep the stored certificate and key.
func egressFormInput(c echo.Context, f egressform.Form, cur *db.EndpointEgress) (egressInput, error) {
	var in egressInput
	switch f.Proxy {
	case egressform.ProxyDefault:
	case egressform.ProxyDirect:
		in.Proxy = egress.ProxyDirect
	case egressform.ProxyOther:
		if f.ProxyURL == "" {
			return in, invalidField("egress.proxy", "is required for another proxy (http://host:port)")
		}
		in.Proxy = f.ProxyURL
	default:
		return in, invalidField("egress.proxy", "choose the default, direct or another proxy")
	}
	in.CABundle = f.CABundle
	cert, key := strings.TrimSpace(c.FormValue(egressform.FieldClientCert)), strings.TrimSpace(c.FormValue(egressform.FieldClientKey))
	stored := cur != nil && cur.ClientCert != ""
	switch {
	case f.RemoveCert:
	case cert == "" && stored:
		in.ClientCert, in.ClientKey = cur.ClientCert, maskedValue
		if key != "" {
			in.ClientKey = key // a new key for the stored certificate
		}
	default:
		in.ClientCert, in.ClientKey = cert, key
	}
	in.Auth.Type = f.AuthType
	keep := func(v string) string {
		if v == "" && cur != nil && cur.AuthKind == f.AuthType && cur.AuthSecret != nil {
			return maskedValue
		}
		return v
	}
	switch f.AuthType {
	case egress.AuthBasic:
		in.Auth.Username, in.Auth.Password = f.Username, keep(c.FormValue(egressform.FieldPassword))
	case egress.AuthOAuth2:
		in.Auth.ClientID, in.Auth.ClientSecret = f.ClientID, keep(c.FormValue(egressform.FieldClientSecret))
		in.Auth.TokenURL, in.Auth.Audience = f.TokenURL, strings.TrimSpace(f.Audience)
		in.Auth.Scopes = strings.Fields(f.Scopes)
	}
	return in, nil
}

// egressFormFields are the form fields (and their labels) that an egress
// object's field errors are about, by the object's field.
var egressFormFields = map[string]struct{ field, label string }{
	"egress.proxy":              {egressform.FieldProxyURL, "Proxy"},
	"egress.ca_bundle":          {egressform.FieldCABundle, "CA bundle"},
	"egress.client_cert":        {egressform.FieldClientCert, "Client certificate"},
	"egress.client_key":         {egressform.FieldClientKey, "Client certificate's private key"},
	"egress.auth.username":      {egressform.FieldUsername, "Basic: username"},
	"egress.auth.password":      {egressform.FieldPassword, "Basic: password"},
	"egress.auth.client_id":     {egressform.FieldClientID, "OAuth2: client id"},
	"egress.auth.client_secret": {egressform.FieldClientSecret, "OAuth2: client secret"},
	"egress.auth.token_url":     {egressform.FieldTokenURL, "OAuth2: token URL"},
}

// egressFormField is the form field and label of an egress object's field
// error; the credential's type for any other.
func egressFormField(apiField string) (string, string) {
	if f, ok := egressFormFields[apiField]; ok {
		return f.field, f.label
	}
	return egressform.FieldAuthType, "Credential"
}

// egressAudit is what the audit log keeps of saved egress settings: what
// is in use, never a key, a password or a secret.
func egressAudit(r db.EndpointEgress) map[string]any {
	d := map[string]any{"proxy": r.Proxy, "custom_ca": r.CaBundle != "", "client_cert_subject": r.ClientCertSubject,
		"auth_type": r.AuthKind}
	if r.ClientCertExpiresAt != nil {
		d["client_cert_expires_at"] = r.ClientCertExpiresAt.UTC()
	}
	if r.AuthKind != egress.AuthNone {
		d["username"] = r.AuthUsername
	}
	return d
}
