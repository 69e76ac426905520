package components

import (
	"strings"

	"github.com/a-h/templ"
)

// CSRFFieldName is the form field the CSRF middleware reads; htmx requests
// send the same token as the X-CSRF-Token header (static/js/hookline.js).
const CSRFFieldName = "csrf_token"

// Option is one choice of a select field.
type Option struct {
	Value string
	Label string
}

// FieldData is the view model of Field: one labelled input with its help
// text and, after a failed submit, its error.
type FieldData struct {
	ID          string // defaults to "field-<Name>"
	Name        string
	Label       string
	Type        string // text | url | number | email | password | textarea | select | checkbox; text when empty
	Value       string // never rendered for password fields
	Placeholder string
	Help        string
	Error       string
	Required    bool
	Checked     bool // checkbox only
	Options     []Option
	Attrs       templ.Attributes // extra input attributes, e.g. autocomplete, hx-*
	Min         string
	Max         string
	Step        string
	Rows        int // textarea height; 4 when zero
}

// fieldID is the input's id; help and error ids derive from it.
func (f FieldData) fieldID() string {
	if f.ID != "" {
		return f.ID
	}
	return FragmentID("field", f.Name)
}

func (f FieldData) helpID() string  { return f.fieldID() + "-help" }
func (f FieldData) errorID() string { return f.fieldID() + "-error" }

// describedBy lists the error and the help text, error first, so a screen
// reader says what is wrong before how to fill the field in.
func (f FieldData) describedBy() string {
	var ids []string
	if f.Error != "" {
		ids = append(ids, f.errorID())
	}
	if f.Help != "" {
		ids = append(ids, f.helpID())
	}
	return strings.Join(ids, " ")
}

// inputType is the type attribute of an <input>.
func (f FieldData) inputType() string {
	switch f.Type {
	case "", "textarea", "select":
		return "text"
	}
	return f.Type
}

// value is what the input shows. A password is never echoed back into the
// page, even after a failed submit.
func (f FieldData) value() string {
	if f.Type == "password" {
		return ""
	}
	return f.Value
}

// controlAttrs are the attributes shared by input, textarea and select.
func (f FieldData) controlAttrs() templ.Attributes {
	a := templ.Attributes{}
	if d := f.describedBy(); d != "" {
		a["aria-describedby"] = d
	}
	if f.Error != "" {
		a["aria-invalid"] = "true"
	}
	if f.Required {
		a["required"] = true
	}
	if f.Placeholder != "" && f.Type != "select" && f.Type != "checkbox" {
		a["placeholder"] = f.Placeholder
	}
	if f.inputType() == "number" || f.inputType() == "range" {
		for k, v := range map[string]string{"min": f.Min, "max": f.Max, "step": f.Step} {
			if v != "" {
				a[k] = v
			}
		}
	}
	for k, v := range f.Attrs {
		a[k] = v
	}
	return a
}

func (f FieldData) rows() int {
	if f.Rows > 0 {
		return f.Rows
	}
	return 4
}
