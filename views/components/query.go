package components

import (
	"net/url"
	"strconv"
)

// Query is a filter's URL query: fields by parameter name, the empty ones
// left out, so a link carries only what narrows the view. The filters of
// the event log, audit log, replays and conversions build their Values
// with it.
func Query(fields map[string]string) url.Values {
	v := url.Values{}
	for k, s := range fields {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// QueryID is an id as a query value: "" for 0, which means no id.
func QueryID(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}
