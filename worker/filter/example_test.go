package filter_test

import (
	"fmt"

	"github.com/hookline/hookline/worker/filter"
)

func Example() {
	f, err := filter.Compile([]byte(`{"status": "approved", "payout": {"$gte": 1}, "country": {"$in": ["BR", "PT"]}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Match([]byte(`{"status": "approved", "payout": "12.50", "country": "BR"}`)))
	fmt.Println(f.Match([]byte(`{"status": "approved", "payout": 0.5, "country": "BR"}`)))

	_, err = filter.Compile([]byte(`{"$or": [{"status": "approved"}, {"payout": {"$gte": "a", "$in": 3}}]}`))
	fmt.Println(err)
	// Output:
	// true
	// false
	// $or[1].payout.$in: must be an array of values, such as ["BR", "PT"]
}
