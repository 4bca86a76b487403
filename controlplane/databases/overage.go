package databases

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// StorageMicrosPerGBMonth is the price of database storage past a paid
// plan's allowance: 1.00 dollar per GB (10^9 bytes) per month, in
// micro-dollars.
const StorageMicrosPerGBMonth = 1_000_000

// StorageCharge is what ChargeStorage did for one workspace.
type StorageCharge struct {
	// Workspace is the workspace charged.
	Workspace string
	// OverBytes is its storage past the allowance.
	OverBytes int64
	// Amount is the day's price of OverBytes, in micro-dollars.
	Amount int64
	// Charged is what the funder could charge; less than Amount means the
	// workspace can no longer pay and writes that add data are held.
	Charged int64
}

// DailyStorageCharge is the price in micro-dollars of a day of overBytes on
// day: the month's price divided by the days of that month, rounded up to
// the micro-dollar.
func DailyStorageCharge(overBytes int64, day time.Time) int64 {
	if overBytes <= 0 {
		return 0
	}
	days := int64(time.Date(day.Year(), day.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day())
	// overBytes / 10^9 GB * 10^6 micro-dollars / days = overBytes / (1000 * days).
	per := 1_000_000_000 / StorageMicrosPerGBMonth * days
	return (overBytes + per - 1) / per
}

// ChargeStorage is the daily measuring of database storage: it measures the
// databases of every workspace that has some and charges each paid
// workspace past its allowance for the day through the StorageFunder, once
// per workspace and day (the charge's reference is the workspace and the
// day, so running it again the same day charges nothing more). Hobby
// workspaces are not charged: their hold is the limit. A workspace the
// funder cannot charge in full is held with usage_paused from its next
// write that adds data. Run it once a day from the jobs runner.
func (s *Service) ChargeStorage(ctx context.Context) ([]StorageCharge, error) {
	wss, err := s.records.storageWorkspaces(ctx)
	if err != nil {
		return nil, err
	}
	var f StorageFunder
	if p := s.funder.Load(); p != nil {
		f = *p
	}
	day := s.d.Clock.Now().UTC()
	var out []StorageCharge
	var errs []error
	for _, ws := range wss {
		allowance, pl := s.allowance(ctx, ws)
		if !pl.StorageOverage {
			continue
		}
		_, used, err := s.usedStorage(ctx, ws)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		over := used - allowance
		if over <= 0 {
			continue
		}
		c := StorageCharge{Workspace: ws, OverBytes: over, Amount: DailyStorageCharge(over, day)}
		if f != nil {
			ref := fmt.Sprintf("database_storage:%s:%s", ws, day.Format(time.DateOnly))
			if c.Charged, err = f.ChargeStorage(ctx, ws, ref, c.Amount); err != nil {
				errs = append(errs, fmt.Errorf("databases: charge storage of %s: %w", ws, err))
				continue
			}
		}
		if c.Charged < c.Amount {
			s.d.Logger.Info("databases: storage past the allowance not paid in full: writes that add data are held",
				"workspace", ws, "overBytes", over, "amountMicros", c.Amount, "chargedMicros", c.Charged)
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}
