package rules

import (
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestCounters(t *testing.T) {
	day1 := time.Date(2026, 8, 22, 23, 59, 59, 0, time.UTC)
	day2 := day1.Add(time.Second)
	inTokyo := day2.In(time.FixedZone("JST", 9*3600)) // same instant, another zone

	c := NewCounters()
	c.Add("site-a", RuleCountry, Refuse, day1)
	c.Add("site-a", RuleCountry, Refuse, day1)
	c.Add("site-a", RuleCountry, WouldRefuse, day1)
	c.Add("site-a", RuleCountry, Refuse, day2)
	c.Add("site-a", RuleDenyList, Refuse, inTokyo)
	c.Add("fn-b", RuleAICrawler, Refuse, day1)
	c.AddDecision("fn-b", Decision{Verdict: Refuse, Rule: RuleAICrawler, Count: true}, day1)
	c.AddDecision("app-c", Decision{Verdict: Refuse, Rule: RuleCountry}, day1) // server app: not counted
	c.AddDecision("site-a", Decision{}, day1)                                  // allow: not counted

	want := []Count{ // sorted by ID, day, rule, verdict
		{ID: "fn-b", Rule: RuleAICrawler, Verdict: Refuse, Day: "2026-08-22", N: 2},
		{ID: "site-a", Rule: RuleCountry, Verdict: Refuse, Day: "2026-08-22", N: 2},
		{ID: "site-a", Rule: RuleCountry, Verdict: WouldRefuse, Day: "2026-08-22", N: 1},
		{ID: "site-a", Rule: RuleDenyList, Verdict: Refuse, Day: "2026-08-23", N: 1},
		{ID: "site-a", Rule: RuleCountry, Verdict: Refuse, Day: "2026-08-23", N: 1},
	}
	if got := c.Drain(); !reflect.DeepEqual(got, want) {
		t.Errorf("Drain =\n%+v\nwant\n%+v", got, want)
	}
	t.Run("drain resets", func(t *testing.T) {
		if got := c.Drain(); len(got) != 0 {
			t.Errorf("second Drain = %+v, want nothing", got)
		}
	})
	t.Run("idle keys are forgotten", func(t *testing.T) {
		for range counterIdleDrains {
			c.Drain()
		}
		n := 0
		for i := range c.shards {
			n += len(c.shards[i].m)
		}
		if n != 0 {
			t.Errorf("%d keys kept after %d idle drains", n, counterIdleDrains)
		}
	})
	t.Run("before 1970", func(t *testing.T) {
		c.Add("x", RuleCountry, Refuse, time.Date(1969, 12, 31, 1, 0, 0, 0, time.UTC))
		if got := c.Drain(); len(got) != 1 || got[0].Day != "1969-12-31" {
			t.Errorf("Drain = %+v", got)
		}
	})
	t.Run("concurrent adds are all counted", func(t *testing.T) {
		var adders sync.WaitGroup
		var drained uint64
		stop, drainerDone := make(chan struct{}), make(chan struct{})
		go func() { // drains while the adders run, as the edge's flusher does
			defer close(drainerDone)
			for {
				for _, ct := range c.Drain() {
					drained += ct.N
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		for g := range 8 {
			adders.Add(1)
			go func() {
				defer adders.Done()
				id := []string{"a", "b", "c", "d"}[g%4]
				for range 1000 {
					c.Add(id, RuleDenyList, Refuse, day1)
				}
			}()
		}
		adders.Wait()
		close(stop)
		<-drainerDone
		for _, ct := range c.Drain() {
			drained += ct.N
		}
		if drained != 8000 {
			t.Errorf("drained %d, want 8000", drained)
		}
	})
}
