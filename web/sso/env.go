package sso

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// CallbackPath is where the provider sends the browser back: the one
// redirect URL registered at the provider, HOOKLINE_PUBLIC_URL + this.
const CallbackPath = "/login/oidc/callback"

// emailDomain is what HOOKLINE_OIDC_ALLOWED_DOMAINS accepts: a DNS name.
var emailDomain = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`)

// claimName is what HOOKLINE_OIDC_ROLE_CLAIM accepts: a claim's name, or a
// dotted path, or a namespaced (URL) claim.
var claimName = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,200}$`)

// FromEnv reads the single sign-on settings (HOOKLINE_OIDC_*), every
// problem by the variable's name; nil when single sign-on is off.
// publicURL is the validated HOOKLINE_PUBLIC_URL.
func FromEnv(getenv func(string) string, publicURL string) (*Config, []error) {
	env := func(name string) string { return strings.TrimSpace(getenv(name)) }
	issuer := strings.TrimRight(env("HOOKLINE_OIDC_ISSUER"), "/")
	var errs []error
	if issuer == "" {
		for _, name := range []string{"HOOKLINE_OIDC_CLIENT_ID", "HOOKLINE_OIDC_CLIENT_SECRET", "HOOKLINE_OIDC_ALLOWED_DOMAINS",
			"HOOKLINE_OIDC_ROLE_CLAIM", "HOOKLINE_OIDC_ADMIN_VALUES", "HOOKLINE_OIDC_OPERATOR_VALUES",
			"HOOKLINE_OIDC_DEFAULT_ROLE", "HOOKLINE_OIDC_PASSWORD_LOGIN"} {
			if env(name) != "" {
				errs = append(errs, fmt.Errorf("%s is set but HOOKLINE_OIDC_ISSUER is not: set the provider's issuer URL too, or unset %s", name, name))
			}
		}
		return nil, errs
	}
	c := &Config{
		Issuer:        issuer,
		ClientID:      env("HOOKLINE_OIDC_CLIENT_ID"),
		ClientSecret:  getenv("HOOKLINE_OIDC_CLIENT_SECRET"),
		RoleClaim:     cmp.Or(env("HOOKLINE_OIDC_ROLE_CLAIM"), "groups"),
		DefaultRole:   RoleViewer,
		PasswordLogin: true,
	}
	if u, err := url.Parse(issuer); err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil ||
		(u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
		errs = append(errs, fmt.Errorf("HOOKLINE_OIDC_ISSUER %q: want the provider's https issuer URL, such as https://accounts.google.com (http only on loopback)", issuer))
	}
	if publicURL == "" {
		errs = append(errs, errors.New("HOOKLINE_OIDC_ISSUER needs HOOKLINE_PUBLIC_URL: the provider's redirect URL is HOOKLINE_PUBLIC_URL"+CallbackPath+", so set HOOKLINE_PUBLIC_URL to the address hookline is reached at"))
	} else {
		c.RedirectURL = publicURL + CallbackPath
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("HOOKLINE_OIDC_CLIENT_ID is required with HOOKLINE_OIDC_ISSUER (the client id the provider gave hookline)"))
	}
	if strings.TrimSpace(c.ClientSecret) == "" {
		errs = append(errs, errors.New("HOOKLINE_OIDC_CLIENT_SECRET is required with HOOKLINE_OIDC_ISSUER (the client secret the provider gave hookline)"))
	}
	if v := env("HOOKLINE_OIDC_ALLOWED_DOMAINS"); v != "" {
		for _, d := range strings.Split(v, ",") {
			d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@"))
			switch {
			case !emailDomain.MatchString(d):
				errs = append(errs, fmt.Errorf("HOOKLINE_OIDC_ALLOWED_DOMAINS %q: domain %q: want email domains such as acme.com,acme.io", v, d))
			case !slices.Contains(c.AllowedDomains, d):
				c.AllowedDomains = append(c.AllowedDomains, d)
			}
		}
	}
	if !claimName.MatchString(c.RoleClaim) {
		errs = append(errs, fmt.Errorf("HOOKLINE_OIDC_ROLE_CLAIM %q: want a claim name such as groups or realm_access.roles", c.RoleClaim))
	}
	var err error
	if c.AdminValues, err = claimValueList(env("HOOKLINE_OIDC_ADMIN_VALUES")); err != nil {
		errs = append(errs, fmt.Errorf("HOOKLINE_OIDC_ADMIN_VALUES: %w", err))
	}
	if c.OperatorValues, err = claimValueList(env("HOOKLINE_OIDC_OPERATOR_VALUES")); err != nil {
		errs = append(errs, fmt.Errorf("HOOKLINE_OIDC_OPERATOR_VALUES: %w", err))
	}
	for _, v := range c.AdminValues {
		if slices.Contains(c.OperatorValues, v) {
			errs = append(errs, fmt.Errorf("HOOKLINE_OIDC_OPERATOR_VALUES: %q is an admin value too (HOOKLINE_OIDC_ADMIN_VALUES): give each value one role", v))
		}
	}
	switch v := env("HOOKLINE_OIDC_DEFAULT_ROLE"); strings.ToLower(v) {
	case "", "viewer":
	case "none":
		c.DefaultRole = ""
	default:
		errs = append(errs, fmt.Errorf("HOOKLINE_OIDC_DEFAULT_ROLE %q: want viewer (everyone allowed can read) or none (only the admin and operator values sign in)", v))
	}
	switch v := env("HOOKLINE_OIDC_PASSWORD_LOGIN"); strings.ToLower(v) {
	case "", "on":
	case "off":
		c.PasswordLogin = false
	default:
		errs = append(errs, fmt.Errorf("HOOKLINE_OIDC_PASSWORD_LOGIN %q: want on or off", v))
	}
	return c, errs
}

// claimValueList reads a comma-separated list of claim values, each once.
func claimValueList(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			return nil, fmt.Errorf("%q: an empty value; want comma-separated claim values such as hookline-admins,platform", v)
		case len(item) > 200:
			return nil, fmt.Errorf("value %.20q...: want at most 200 characters", item)
		case !slices.Contains(out, item):
			out = append(out, item)
		}
	}
	return out, nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
