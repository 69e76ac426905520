package budget_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/budget"
)

var t0 = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

func TestFailWarnsOnceAndDisables(t *testing.T) {
	b, err := budget.New(4, 0)
	if err != nil {
		t.Fatal(err)
	}
	var s budget.Streak
	var warns []int
	for i := 1; i <= 4; i++ {
		v := b.Fail(s, t0.Add(time.Duration(i)*time.Minute))
		s = v.Streak
		if v.Warn > 0 {
			warns = append(warns, v.Warn)
		}
		if v.Disable != (i == 4) {
			t.Fatalf("failure %d: disable = %v", i, v.Disable)
		}
	}
	if fmt.Sprint(warns) != "[50 70]" {
		t.Fatalf("warnings = %v, want [50 70] (at 2 and 3 failures)", warns)
	}
}

func TestSpanHoldsDisable(t *testing.T) {
	b, _ := budget.New(3, 72)
	s := budget.Streak{}
	for i := range 5 {
		v := b.Fail(s, t0.Add(time.Duration(i)*time.Second))
		if v.Disable {
			t.Fatalf("a 5-second burst disabled the endpoint at failure %d", i+1)
		}
		s = v.Streak
	}
	if v := b.Fail(s, t0.Add(72*time.Hour)); !v.Disable {
		t.Fatal("not disabled once the failures spanned 72 h")
	}
}

func TestWarningLevels(t *testing.T) {
	b, _ := budget.New(10, 72)
	s := budget.Streak{}
	got := map[int]int{}
	for i := 1; i <= 9; i++ {
		v := b.Fail(s, t0)
		s = v.Streak
		if v.Warn > 0 {
			got[i] = v.Warn
		}
	}
	if fmt.Sprint(got) != "map[5:50 7:70 9:90]" {
		t.Fatalf("warnings by failure = %v", got)
	}
	if s = b.Succeed(s); s.Failures != 0 || s.Warned != 0 {
		t.Fatalf("success left %+v", s)
	}
}

func TestOff(t *testing.T) {
	b, _ := budget.New(0, 72)
	v := b.Fail(budget.Streak{Failures: 500, FirstAt: t0}, t0.Add(1000*time.Hour))
	if v.Disable || v.Warn != 0 {
		t.Fatalf("budget off still acted: %+v", v)
	}
}

func TestNewValidates(t *testing.T) {
	for _, c := range [][2]int{{-1, 1}, {10001, 1}, {1, -1}, {1, 8761}} {
		if _, err := budget.New(c[0], c[1]); err == nil {
			t.Errorf("New(%d, %d) accepted", c[0], c[1])
		}
	}
}

func ExampleBudget_Progress() {
	b, _ := budget.New(10, 72)
	s := budget.Streak{Failures: 7, FirstAt: t0}
	fmt.Println(b.Progress(s, t0.Add(41*time.Hour+20*time.Minute)))
	// Output: 7 of 10 failures in 41 h
}
