// Package deadletters renders the dead-letter page: clusters of dead
// deliveries with the article's diagnosis, payout at risk, and one-click
// replay of a delivery, a cluster, an endpoint, or an endpoint since a time.
package deadletters

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/views/components"
)

// PageData is /dead-letters.
type PageData struct {
	Hours int
	// Since is where the window starts: the start of its first UTC hour,
	// as dead letters are counted by the hour.
	Since      time.Time
	EndpointID int64 // 0: all endpoints
	Clusters   []Cluster
	Endpoints  []Option // endpoints with dead letters, for the "since" form
	CanOperate bool
	Now        time.Time
	CSRF       string
}

// Option is an endpoint in a select.
type Option struct {
	ID   int64
	Name string
}

// Cluster is one group of dead letters.
type Cluster struct {
	Key          string
	EndpointID   int64
	Endpoint     string
	Partner      string
	Enabled      bool
	Class        string
	StatusCode   int32
	Count        int64
	First, Last  time.Time
	AvgAttempts  float64
	PrimaryError string
	PayoutAtRisk float64
	// PayoutCurrencies are the distinct currencies of the summed events;
	// PayoutUnlabelled, that some of them named none.
	PayoutCurrencies []string
	PayoutUnlabelled bool
	Pattern          string
	Summary          string
	Action           string
	// EventsURL is the event log filtered to the endpoint's dead
	// deliveries (the log filters by event time, not by error class).
	EventsURL string
}

// Delivery is one dead delivery of an expanded cluster.
type Delivery struct {
	ID          int64
	EventID     string
	EventType   string
	Attempts    int32
	DeadAt      time.Time
	Error       string
	ReplayCount int32
}

// Progress follows one replay: re-queued, then delivered.
type Progress struct {
	EndpointID int64
	At         time.Time // the replay's timestamp
	Requeued   int64
	Delivered  int64
	Waiting    int64
	Dead       int64
	Target     string // the element id to keep swapping
	// Cluster, when the replay took a whole cluster, is its key, and
	// Remaining how many dead letters it holds now in the page's window of
	// Hours: the view updates the cluster row's count with it.
	Cluster   string
	Hours     int
	Remaining int64
}

// CountID is the fragment id of a cluster row's count.
func CountID(key string) string { return RowID(key) + "-count" }

// DeliveryID is the fragment id of a dead delivery in an expanded cluster.
func DeliveryID(id int64) string { return components.FragmentID("dead-delivery", itoa(id)) }

// DeliveryActionID is the fragment id of a dead delivery's replay action,
// replaced by the replay's progress.
func DeliveryActionID(id int64) string { return DeliveryID(id) + "-action" }

// RowID is the fragment id of a cluster's row.
func RowID(key string) string { return components.FragmentID("cluster", key) }

// ProgressURL polls a replay's progress.
func ProgressURL(p Progress) string {
	v := url.Values{}
	v.Set("endpoint", strconv.FormatInt(p.EndpointID, 10))
	v.Set("at", p.At.UTC().Format(time.RFC3339Nano))
	v.Set("requeued", strconv.FormatInt(p.Requeued, 10))
	v.Set("target", p.Target)
	if p.Cluster != "" {
		v.Set("cluster", p.Cluster)
		v.Set("hours", strconv.Itoa(p.Hours))
	}
	return "/dead-letters/progress?" + v.Encode()
}

func clusterURL(key string, hours int) string {
	v := url.Values{}
	v.Set("key", key)
	v.Set("hours", strconv.Itoa(hours))
	return "/dead-letters/cluster?" + v.Encode()
}

func statusText(c Cluster) string {
	if c.StatusCode == 0 {
		return "no response"
	}
	return strconv.Itoa(int(c.StatusCode))
}

func patternTone(p string) string {
	switch p {
	case "outage_burst", "credentials", "gone":
		return components.ToneCritical
	case "rate_limited", "trickle", "rejected_by_tracker":
		return components.ToneWarn
	}
	return components.ToneInfo
}

func money(v float64) string {
	if v == 0 {
		return components.Dash
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// payout is a cluster's payout at risk with its currency when every summed
// event named the same one, and otherwise the sum with a note saying what
// it adds up.
func payout(c Cluster) (amount, note string) {
	amount = money(c.PayoutAtRisk)
	switch {
	case c.PayoutAtRisk == 0:
		return amount, ""
	case len(c.PayoutCurrencies) == 1 && !c.PayoutUnlabelled:
		return amount + " " + c.PayoutCurrencies[0], ""
	case len(c.PayoutCurrencies) == 0:
		return amount, "raw sum: the events name no currency"
	}
	return amount, "raw sum of mixed currencies (" + strings.Join(c.PayoutCurrencies, ", ") + unlabelled(c.PayoutUnlabelled) + ")"
}

func unlabelled(some bool) string {
	if some {
		return ", and none"
	}
	return ""
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}

func attemptsText(avg float64) string {
	if avg == float64(int64(avg)) {
		return plural(int64(avg), "attempt") + " each"
	}
	return strconv.FormatFloat(avg, 'f', 1, 64) + " attempts each on average"
}
