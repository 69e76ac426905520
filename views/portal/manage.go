package portal

import "github.com/hookline/hookline/views/endpointform"

// Element ids of the endpoint-management fragments, shared with hx-target.
const (
	NewFormID  = "portal-new-form"
	ManageID   = "portal-manage"
	NewPreview = endpointform.PreviewID
)

// NewEndpoint is the portal's form for a new endpoint (shown only to a
// partner its operator allows to manage endpoints): kind, name, URL or
// template, event types and custom headers; every other setting takes the
// operator's defaults.
type NewEndpoint struct {
	Kind       string // webhook | postback
	Name       string
	URL        string
	MacroStyle string
	EventTypes string
	Headers    string
	Errors     map[string]string
	Preview    endpointform.Preview
	CSRF       string
}

// Created is the page after the partner created an endpoint: its signing
// secret, shown once, and what the save-time lint warns about.
type Created struct {
	EndpointID int64
	Name       string
	Kind       string
	Secret     string
	Warnings   []endpointform.Warning
}

// Manage is the endpoint page's panel for a partner allowed to manage its
// endpoints: event types and disable / enable.
type Manage struct {
	EndpointID     int64
	Enabled        bool
	DisabledReason string
	EventTypes     string // as typed, comma-separated
	Error          string // the event types' problem
	Saved          string // what was just changed
	CSRF           string
}

func kindURL(kind string) string { return "/portal/endpoints/new?kind=" + kind }

func newErrorList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range []string{"name", "url", "macro_style", "event_types", "headers"} {
		if v, ok := m[k]; ok {
			out = append(out, k+": "+v)
		}
	}
	for k, v := range m {
		switch k {
		case "name", "url", "macro_style", "event_types", "headers":
		default:
			out = append(out, k+": "+v)
		}
	}
	return out
}
