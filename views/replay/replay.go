// Package replay renders bulk replays: the form that chooses deliveries by
// endpoint, status, event type, search key and time range and shows how
// many match before it is confirmed, and a replay's progress.
package replay

import (
	"net/url"
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
)

// Form is /deliveries/replay: the filter as typed (query values), the
// endpoints to choose from and, once previewed, the count.
type Form struct {
	Status     string // dead | delivered
	EndpointID string
	EventType  string
	Q          string
	Since      string // datetime-local text, UTC
	Until      string
	Endpoints  []components.Option
	// Counted is set after a preview: Count deliveries match.
	Counted    bool
	Count      int64
	Errors     map[string]string // field -> message
	CanOperate bool
	CSRF       string
}

// Values is the filter as query values, for the preview and the confirm.
func (f Form) Values() url.Values {
	return components.Query(map[string]string{"status": f.Status, "endpoint_id": f.EndpointID, "event_type": f.EventType,
		"q": f.Q, "since": f.Since, "until": f.Until})
}

// Job is a replay's page: its filter and progress.
type Job struct {
	ID         int64
	State      string
	Status     string
	Endpoint   string // "" for every endpoint
	EndpointID int64
	EventType  string
	Q          string
	Since      *time.Time
	Until      *time.Time
	Total      int64
	Replayed   int64
	Delivered  int64
	Waiting    int64
	Dead       int64
	CreatedBy  string
	CreatedAt  time.Time
	FinishedAt *time.Time
	CanOperate bool
	CSRF       string
}

// JobID is the progress fragment, refreshed while the replay runs.
const JobID = "replay-job"

// URL is the replay's page.
func (j Job) URL() string { return "/replays/" + strconv.FormatInt(j.ID, 10) }

// Percent is how much of the total has been re-queued.
func (j Job) Percent() int {
	if j.Total == 0 {
		return 100
	}
	return int(min(100, j.Replayed*100/j.Total))
}
