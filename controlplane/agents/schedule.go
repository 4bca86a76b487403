package agents

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store"
)

// cronParser reads five cron fields and the @hourly/@daily/@weekly/@monthly
// descriptors (others are refused before parsing).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

var descriptors = map[string]bool{"@hourly": true, "@daily": true, "@weekly": true, "@monthly": true}

// MaxCron bounds the length of a schedule's text (ours).
const MaxCron = 200

// ParseSchedule reads a schedule: five cron fields in UTC, or @hourly,
// @daily, @weekly, @monthly. A schedule whose runs could come closer than
// ten minutes apart is refused. It returns the schedule and its text.
func ParseSchedule(text string) (cron.Schedule, string, error) {
	text = strings.Join(strings.Fields(text), " ")
	bad := func(format string, args ...any) *api.Error {
		return api.E(api.KindInvalid, "invalid_schedule", format, args...).With("field", "schedule")
	}
	switch {
	case text == "":
		return nil, "", bad("schedule needs five cron fields (minute hour day-of-month month day-of-week, in UTC) or @hourly, @daily, @weekly, @monthly")
	case len(text) > MaxCron:
		return nil, "", bad("schedule is longer than %d characters", MaxCron)
	case strings.HasPrefix(text, "@") && !descriptors[text]:
		return nil, "", bad("%s is not accepted: use five cron fields or @hourly, @daily, @weekly, @monthly", text)
	case strings.Contains(text, "TZ="):
		return nil, "", bad("schedules are in UTC; time zones are not accepted")
	case !strings.HasPrefix(text, "@") && len(strings.Fields(text)) != 5:
		return nil, "", bad("schedule needs exactly five cron fields (minute hour day-of-month month day-of-week), not %d", len(strings.Fields(text)))
	}
	sched, err := cronParser.Parse(text)
	if err != nil {
		return nil, "", bad("schedule %q: %v", text, err)
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, "", bad("schedule %q is not a cron schedule", text)
	}
	spec.Location = time.UTC
	if gap := minGap(spec); gap < MinScheduleGap {
		return nil, "", bad("schedule %q may run %s apart; schedules no closer than ten minutes are accepted", text, gap).
			With("minGap", gap.String())
	}
	if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, "", bad("schedule %q never runs", text)
	}
	return spec, text, nil
}

const fieldMask = 1<<63 - 1 // cron's star bit off

// minGap is the smallest time two runs of spec can be apart: minutes set
// close together within an hour, or the last minute of an hour and the
// first of the next where two consecutive hours are allowed.
func minGap(spec *cron.SpecSchedule) time.Duration {
	mins := setBits(spec.Minute&fieldMask, 60)
	hours := setBits(spec.Hour&fieldMask, 24)
	if len(mins) == 0 || len(hours) == 0 {
		return 24 * time.Hour
	}
	gap := 60
	for i := 1; i < len(mins); i++ {
		gap = min(gap, mins[i]-mins[i-1])
	}
	consecutive := false
	hourSet := spec.Hour & fieldMask
	for _, h := range hours {
		if hourSet&(1<<uint((h+1)%24)) != 0 {
			consecutive = true
		}
	}
	if consecutive {
		gap = min(gap, 60-mins[len(mins)-1]+mins[0])
	}
	if len(hours) == 1 && len(mins) == 1 {
		return 24 * time.Hour
	}
	return time.Duration(gap) * time.Minute
}

func setBits(v uint64, n int) []int {
	var out []int
	for v != 0 {
		b := bits.TrailingZeros64(v)
		if b >= n {
			break
		}
		out = append(out, b)
		v &^= 1 << b
	}
	return out
}

// slotPayload is a scheduled slot's job.
type slotPayload struct {
	Agent string    `json:"agent"`
	Slot  time.Time `json:"slot"`
}

// scheduleJob starts the scheduled run of one slot and queues the next
// slot. A slot no longer current (the schedule changed) does nothing.
func (s *Service) scheduleJob(ctx context.Context, j jobs.Job) error {
	var sp slotPayload
	if err := json.Unmarshal(j.Payload, &sp); err != nil {
		return jobs.Permanent(fmt.Errorf("agents: schedule payload: %w", err))
	}
	return s.fireSlot(ctx, sp.Agent, sp.Slot)
}

// fireSlot runs the agent's schedule for slot if it is still the due one.
func (s *Service) fireSlot(ctx context.Context, agentID string, slot time.Time) error {
	a, err := s.st.agent(ctx, s.d.DB, agentID)
	if err != nil {
		if api.AsError(err).Kind == api.KindNotFound {
			return nil
		}
		return err
	}
	if a.schedule.Cron == "" || !a.schedule.Next.Equal(slot.UTC()) {
		return nil
	}
	sched, _, err := ParseSchedule(a.schedule.Cron)
	if err != nil {
		return jobs.Permanent(err)
	}
	now := s.now()
	a.schedule.Next = sched.Next(maxTime(now, slot))
	var startErr error
	if a.Status == StatusPaused {
		startErr = api.Conflict("agent_paused", "the agent is paused; the scheduled run did not start")
	}
	input := a.schedule.Input
	if input == "" {
		input = "Scheduled run at " + store.FormatTime(slot) + "."
	}
	if startErr == nil {
		_, startErr = s.enqueueRun(ctx, a, a.setup, ModeSchedule, input)
	}
	// Advance the schedule whatever happened to this slot.
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE agents SET schedule_next = ? WHERE id = ? AND schedule_next = ?`,
			store.FormatTime(a.schedule.Next), a.ID, store.FormatTime(slot)); err != nil {
			return err
		}
		return s.enqueueSlot(ctx, tx, a)
	})
	if err != nil {
		return fmt.Errorf("agents: next slot of %s: %w", a.ID, err)
	}
	if startErr != nil {
		s.st.setLastError(ctx, a.ID, "schedule: "+api.AsError(startErr).Message, now)
		return nil
	}
	s.d.Jobs.Wake()
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
